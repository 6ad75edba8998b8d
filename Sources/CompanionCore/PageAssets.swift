/// The page, served from the binary: its HTML here, its style and script beside it
/// (PageStyle.swift, PageScript.swift). No framework, no build step, nothing from the internet.
public enum PageAssets {
    /// The page for a signed-in browser; `token` goes with every action it sends.
    public static func page(token: String, canSignOut: Bool) -> String {
        let signOut = canSignOut ? """
            <form method="post" action="/logout" class="sign-out"><button type="submit" class="quiet">Sign out</button></form>
            """ : ""
        return """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
            <meta name="companion-token" content="\(escape(token))">
            <meta name="color-scheme" content="dark">
            <title>Alarms</title>
            <link rel="stylesheet" href="/companion.css">
            <script src="/companion.js" defer></script>
            </head>
            <body>
            <header class="top">
              <h1>Alarms</h1>
              <p id="now" class="now"></p>
              <p id="connection" class="connection" role="status">Connecting…</p>
            </header>
            <main id="nodes" class="nodes"><p class="empty">Waiting for the nodes…</p></main>
            <section id="alert" class="alert" hidden role="alertdialog" aria-modal="true" aria-labelledby="alert-heading">
              <h2 id="alert-heading" class="visually-hidden">Alerting</h2>
              <div id="alert-list" class="alert-list"></div>
            </section>
            <form id="new-alarm" class="new-alarm" autocomplete="off">
              <label for="new-text">New timer or alarm</label>
              <div class="new-row">
                <input id="new-text" name="text" type="text" required maxlength="200"
                       placeholder="10m Tea, 07:00 weekdays Work" aria-describedby="new-help new-error">
                <label for="new-node" class="visually-hidden">On node</label>
                <select id="new-node" name="node"></select>
                <button type="submit">Add</button>
              </div>
              <p id="new-help" class="help">As alarmctl takes it: a duration and a title for a timer, a time, days and a title for an alarm.</p>
              <p id="new-error" class="error" role="alert"></p>
              <p id="new-done" class="help" role="status"></p>
            </form>
            <div id="announcer" class="visually-hidden" aria-live="polite"></div>
            \(signOut)
            </body>
            </html>
            """
    }

    /// The sign-in page, with the reason of a failed attempt.
    public static func signInPage(error: String?) -> String {
        let message = error.map { "<p class=\"error\" role=\"alert\">\(escape($0))</p>" } ?? ""
        return """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="color-scheme" content="dark">
            <title>Alarms: sign in</title>
            <link rel="stylesheet" href="/companion.css">
            </head>
            <body>
            <main class="sign-in">
              <h1>Alarms</h1>
              <form method="post" action="/login">
                <label for="password">The companion's password</label>
                <input id="password" name="password" type="password" autocomplete="current-password" required autofocus>
                <button type="submit">Sign in</button>
                \(message)
              </form>
            </main>
            </body>
            </html>
            """
    }

    /// `text` with HTML's special characters escaped.
    static func escape(_ text: String) -> String {
        let entities: [Character: String] = ["&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;"]
        return text.map { entities[$0] ?? String($0) }.joined()
    }
}
