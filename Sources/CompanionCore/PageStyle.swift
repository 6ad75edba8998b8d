extension PageAssets {
    /// The page's style: dark like a Lock Screen; one column at phone width, two on a wide
    /// screen; the alert covers the whole screen.
    public static let style = #"""
        :root {
          color-scheme: dark;
          --bg: #000; --card: #1c1c1e; --card-2: #2c2c2e; --text: #f2f2f7; --muted: #a1a1a8;
          --online: #30d158; --offline: #8e8e93; --danger: #ff6961; --stop: #d70015;
          font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
        }
        * { box-sizing: border-box; }
        html, body { margin: 0; background: var(--bg); color: var(--text); }
        body { min-height: 100vh; padding: 12px 12px 24px; line-height: 1.35; }
        h1 { font-size: 1.25rem; margin: 0; letter-spacing: .01em; }
        h2 { font-size: 1.05rem; margin: 0; }
        button, input, select { font: inherit; }
        button {
          min-height: 44px; min-width: 44px; padding: 8px 16px; border-radius: 22px; border: 0;
          background: var(--card-2); color: var(--text); font-weight: 600; cursor: pointer;
        }
        button:focus-visible, input:focus-visible, select:focus-visible { outline: 3px solid #64d2ff; outline-offset: 2px; }
        button:disabled { opacity: .55; cursor: default; }
        .quiet { background: transparent; color: var(--muted); font-weight: 500; }
        .visually-hidden {
          position: absolute !important; width: 1px; height: 1px; overflow: hidden;
          clip: rect(0 0 0 0); clip-path: inset(50%); white-space: nowrap;
        }
        .top { display: flex; align-items: baseline; justify-content: space-between; gap: 12px; margin-bottom: 10px; }
        .connection { margin: 0; color: var(--muted); font-size: .85rem; }
        .now { margin: 0; font-size: 1.6rem; font-weight: 600; font-variant-numeric: tabular-nums; }
        .connection.lost { color: var(--danger); font-weight: 600; }
        .nodes { display: grid; gap: 14px; }
        .empty { color: var(--muted); }
        .node { display: grid; gap: 8px; align-content: start; }
        .node-head { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 10px; }
        .pill {
          display: inline-flex; align-items: center; gap: 6px; padding: 2px 10px; border-radius: 12px;
          background: var(--card); font-size: .8rem; color: var(--muted);
        }
        .pill::before { content: ""; width: 8px; height: 8px; border-radius: 50%; background: var(--offline); }
        .pill.online { color: var(--text); }
        .pill.online::before { background: var(--online); }
        .pill.group::before { display: none; }
        .node-facts { margin: 0; color: var(--muted); font-size: .8rem; width: 100%; }
        .alarms { list-style: none; margin: 0; padding: 0; display: grid; gap: 8px; }
        .alarm {
          display: grid; grid-template-columns: auto 1fr; grid-template-areas: "ring text" "buttons buttons";
          align-items: center; gap: 8px 12px; padding: 12px; border-radius: 20px; background: var(--card);
          border-left: 4px solid var(--tint, #888);
        }
        .alarm.stale { opacity: .55; border-left-color: var(--offline); }
        .ring circle { fill: none; stroke-width: 9; }
        .ring .track { stroke: #3a3a3c; }
        .ring .progress { stroke: var(--tint, #888); stroke-linecap: round; transform: rotate(-90deg); transform-origin: 50% 50%; }
        .ring, .badge { grid-area: ring; width: 56px; height: 56px; }
        .badge-face { fill: color-mix(in srgb, var(--tint, #888) 22%, transparent); }
        .badge-hands { fill: none; stroke: var(--tint, #888); stroke-width: 8; stroke-linecap: round; stroke-linejoin: round; }
        .alarm.stale .ring .progress, .alarm.stale .badge-hands { stroke: var(--offline); }
        .alarm.stale .badge-face { fill: #2c2c2e; }
        .alarm-text { grid-area: text; min-width: 0; }
        .alarm-title { margin: 0; font-size: .95rem; color: var(--muted); overflow-wrap: anywhere; }
        .remaining { margin: 0; font-size: 2.1rem; font-weight: 600; font-variant-numeric: tabular-nums; line-height: 1.1; }
        .remaining.small { font-size: 1.35rem; }
        .detail { margin: 0; color: var(--muted); font-size: .8rem; }
        .buttons { grid-area: buttons; display: flex; flex-wrap: wrap; gap: 8px; justify-content: flex-end; }
        .error, .unanswered { color: var(--danger); margin: 4px 0 0; font-size: .85rem; }
        .error:empty { display: none; }
        .new-alarm { margin-top: 18px; padding: 12px; border-radius: 20px; background: var(--card); }
        .new-alarm > label { display: block; font-weight: 600; margin-bottom: 6px; }
        .new-row { display: flex; flex-wrap: wrap; gap: 8px; }
        .new-row input { flex: 1 1 180px; }
        input, select {
          min-height: 44px; padding: 8px 12px; border-radius: 12px; border: 1px solid #48484a;
          background: #000; color: var(--text);
        }
        .help { margin: 6px 0 0; color: var(--muted); font-size: .8rem; }
        .sign-out { margin-top: 10px; text-align: right; }
        .alert {
          position: fixed; inset: 0; z-index: 10; display: grid; overflow: auto;
          background: radial-gradient(circle at 50% 30%, color-mix(in srgb, var(--tint, #ff9500) 55%, #000), #000 75%);
        }
        .alert[hidden] { display: none; }
        .alert-list { display: grid; gap: 16px; align-content: center; padding: 24px; }
        .alert-item { display: grid; justify-items: center; gap: 14px; text-align: center; }
        .alert-node { margin: 0; color: var(--muted); font-size: .9rem; }
        .alert-title {
          margin: 0; font-size: 2.6rem; font-weight: 700; overflow-wrap: anywhere;
          display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 2; overflow: hidden;
        }
        .alert-buttons { display: flex; flex-wrap: wrap; justify-content: center; gap: 14px; }
        .alert-buttons button { min-width: 140px; min-height: 64px; border-radius: 32px; font-size: 1.3rem; }
        .alert-buttons .stop { background: var(--stop); color: #fff !important; } /* 5.4:1, legible half awake */
        .alert-buttons .secondary { background: rgba(255, 255, 255, .18); }
        /* Several alerts at once: smaller, two side by side where they fit, so that each one's Stop
           shows on a 800×480 screen too. */
        .alert-list.several { gap: 10px; padding: 12px; grid-template-columns: repeat(auto-fit, minmax(min(100%, 340px), 1fr)); }
        .alert-list.several .alert-item { gap: 6px; }
        .alert-list.several .alert-node { max-width: 100%; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
        .alert-list.several .alert-title { font-size: 1.6rem; -webkit-line-clamp: 1; }
        .alert-list.several .alert-buttons button { min-height: 52px; }
        .sign-in { max-width: 360px; margin: 15vh auto 0; display: grid; gap: 12px; }
        .sign-in form { display: grid; gap: 10px; }
        @media (min-width: 700px) {
          body { padding: 16px 20px; }
          .nodes { grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); }
          .alarm { grid-template-columns: auto 1fr auto; grid-template-areas: "ring text buttons"; }
          .buttons { flex-direction: column; flex-wrap: nowrap; }
          .buttons button { padding: 6px 14px; }
          .alert-title { font-size: 3.4rem; }
        }
        @media (prefers-reduced-motion: reduce) { * { transition: none !important; } }
        """#
}
