// Linux interfaces that Swift's Glibc module does not export: the module is
// built without _GNU_SOURCE, and it leaves out <sys/timerfd.h>, <sys/timex.h>,
// <sys/eventfd.h> and <sys/inotify.h>; <malloc.h>'s malloc_trim; wcwidth,
// newlocale and uselocale.
// Only the Swift target LinuxSystem imports this module.
#ifndef CLINUX_H
#define CLINUX_H

#include <malloc.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/timex.h>
#include <unistd.h>
#include <wchar.h>
#include <locale.h>
#include <bits/types/locale_t.h>

// <wchar.h> declares wcwidth only under _XOPEN_SOURCE, <locale.h> newlocale and uselocale
// only under POSIX 2008.
extern int wcwidth(wchar_t c);
extern locale_t newlocale(int category_mask, const char *locale, locale_t base);
extern locale_t uselocale(locale_t locale);
static const int CLINUX_LC_CTYPE_MASK = 1 << LC_CTYPE;

// glibc declares strerrorname_np (glibc 2.32+) only under _GNU_SOURCE.
extern const char *strerrorname_np(int errnum);

/// The symbolic name of an errno value ("ENOSPC"), or NULL when unknown.
static inline const char *clinux_errno_name(int errnum) {
    return strerrorname_np(errnum);
}

/// The renameat2(2) flag that makes a rename fail with EEXIST instead of
/// replacing the target (from <linux/fs.h>, hidden without _GNU_SOURCE).
static const unsigned int CLINUX_RENAME_NOREPLACE = 1U << 0;

/// renameat2(2) through syscall(2), which is variadic and so not callable from Swift.
static inline int clinux_renameat2(int olddirfd, const char *oldpath,
                                   int newdirfd, const char *newpath,
                                   unsigned int flags) {
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}

/// prctl(PR_SET_NAME): names the calling thread (at most 15 bytes are kept),
/// as shown by `top -H` and in /proc/<pid>/task/<tid>/comm. prctl is variadic.
static inline int clinux_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

// The timerfd, eventfd and inotify flags are anonymous enum constants in glibc and import
// into Swift as Int; these typed copies spare every call site a conversion.
static const int CLINUX_TFD_CLOEXEC = TFD_CLOEXEC;
static const int CLINUX_TFD_NONBLOCK = TFD_NONBLOCK;
static const int CLINUX_TFD_TIMER_ABSTIME = TFD_TIMER_ABSTIME;
static const int CLINUX_TFD_TIMER_CANCEL_ON_SET = TFD_TIMER_CANCEL_ON_SET;
static const int CLINUX_EFD_CLOEXEC = EFD_CLOEXEC;
static const int CLINUX_EFD_NONBLOCK = EFD_NONBLOCK;
static const int CLINUX_IN_CLOEXEC = IN_CLOEXEC;
static const int CLINUX_IN_NONBLOCK = IN_NONBLOCK;

#endif
