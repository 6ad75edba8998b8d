#ifndef CGPIOD_SHIM_H
#define CGPIOD_SHIM_H

#include <gpiod.h>

#endif
