/// The observer's page: one self-contained HTML file (styles and script inline, no CDN, no
/// build step), served at `/`. It reads its token from its own URL, opens `/ws` with it, and
/// renders each document it is sent; the charts keep the last minute in the page.
///
/// Element ids and classes are a contract with the browser test
/// (`scripts/observer-browser-test.py`): `#connection`, `#actor-count`, `#handlers-started`,
/// `#messages-per-second`, `#dead-letters`, `#stuck-handlers`, `table#actors` with
/// `th[data-sort]` and `tr[data-actor-id]` rows holding `td.name` … `td.restarts`,
/// `button.stop` and the `td.family a` links (parent, children), `input#search`, and in the
/// selected actor's `#details`: `#inspection` with `button#describe`, `#description`,
/// `input#test-message`, `button#send-test-message` and `#test-message-outcome`; and
/// `#section-tables` with a `table.section-table[data-name]` per table of a module's section.
enum ObserverPage {
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Troupe observer</title>
        <link rel="icon" href="data:,">
        <style>
          :root { --fg:#1d2330; --muted:#667085; --line:#e4e7ec; --accent:#3056d3; --warn:#b42318; --bg:#f8f9fb; }
          * { box-sizing: border-box; }
          body { margin:0; font:14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--fg); background:var(--bg); }
          header { display:flex; align-items:center; gap:16px; padding:10px 20px; background:#fff; border-bottom:1px solid var(--line); }
          header h1 { font-size:16px; margin:0; }
          #connection { padding:2px 8px; border-radius:10px; font-size:12px; background:#fef0c7; }
          #connection.live { background:#d1fadf; }
          #connection.disconnected { background:#fee4e2; }
          main { padding:16px 20px; display:grid; gap:16px; grid-template-columns: 1fr 1fr; }
          section { background:#fff; border:1px solid var(--line); border-radius:8px; padding:12px 14px; }
          section.wide { grid-column: 1 / -1; }
          h2 { font-size:13px; text-transform:uppercase; letter-spacing:.04em; color:var(--muted); margin:0 0 8px; }
          .figures { display:flex; flex-wrap:wrap; gap:22px; }
          .figure b { display:block; font-size:22px; font-variant-numeric: tabular-nums; }
          .figure span { color:var(--muted); font-size:12px; }
          .warn b { color:var(--warn); }
          canvas { width:100%; height:120px; }
          table { border-collapse:collapse; width:100%; font-variant-numeric: tabular-nums; }
          #section-tables h3 { font-size:12px; font-weight:600; margin:12px 0 4px; }
          table.section-table td.actors { white-space:normal; }
          table.section-table td.actors a { white-space:nowrap; }
          th, td { text-align:left; padding:4px 8px; border-bottom:1px solid var(--line); white-space:nowrap; }
          td.num, th.num { text-align:right; }
          th[data-sort] { cursor:pointer; user-select:none; }
          th.sorted { color:var(--accent); }
          th.sorted::after { content:" \25BE"; }
          th.sorted[data-sort=name]::after { content:" \25B4"; }
          tr.stuck td { background:#fee4e2; }
          tr.selected td { background:#eef4ff; }
          button.stop, button.restart { margin-left:4px; font-size:12px; padding:1px 8px; border:1px solid var(--warn); color:var(--warn); background:#fff; border-radius:4px; cursor:pointer; }
          td.family a { margin-right:6px; font-size:11px; color:var(--muted); }
          td.type { max-width:260px; overflow:hidden; text-overflow:ellipsis; }
          input#search { padding:4px 8px; width:340px; border:1px solid var(--line); border-radius:4px; }
          .muted { color:var(--muted); }
          #details pre { margin:0; white-space:pre-wrap; }
        </style>
        </head>
        <body>
        <header>
          <h1>Troupe observer — <span id="system-name">…</span></h1>
          <span id="connection">connecting</span>
          <span class="muted">up <span id="uptime">0</span> s</span>
        </header>
        <main>
          <section class="wide">
            <h2>System</h2>
            <div class="figures">
              <div class="figure"><b id="messages-per-second">0</b><span>messages / s</span></div>
              <div class="figure"><b id="handlers-started">0</b><span>handlers started</span></div>
              <div class="figure"><b id="actor-count">0</b><span>live actors</span></div>
              <div class="figure"><b id="busy-workers">0</b><span>busy workers</span></div>
              <div class="figure" id="dead-letters-figure"><b id="dead-letters">0</b><span>dead letters</span></div>
              <div class="figure" id="stuck-figure"><b id="stuck-handlers">0</b><span>stuck handlers</span></div>
            </div>
          </section>
          <section>
            <h2>Messages per second, last minute</h2>
            <canvas id="chart-messages" width="600" height="120"></canvas>
          </section>
          <section>
            <h2>p99 per update, microseconds: <span style="color:#f79009">time in mailbox</span>, <span style="color:#12b76a">handler</span></h2>
            <canvas id="chart-workers" width="600" height="120"></canvas>
          </section>
          <section>
            <h2>Workers</h2>
            <table id="workers"><thead><tr><th>#</th><th>running</th><th>message</th><th class="num">for</th><th class="num">handlers</th></tr></thead><tbody></tbody></table>
          </section>
          <section>
            <h2>Latency (sampled) and dead letters</h2>
            <table id="latency"><thead><tr><th></th><th class="num">count</th><th class="num">p50 µs</th><th class="num">p90 µs</th><th class="num">p99 µs</th><th class="num">max µs</th></tr></thead><tbody></tbody></table>
            <p id="dead-letter-reasons" class="muted"></p>
            <pre id="recent-failures" class="muted"></pre>
          </section>
          <section class="wide">
            <h2>Actors <span class="muted" id="matching"></span></h2>
            <p><input id="search" type="search" placeholder="name, type, #id; id:#id for one actor, parent:#id for its children"></p>
            <table id="actors">
              <thead><tr>
                <th data-sort="name">actor</th><th>family</th><th>type</th><th>state</th>
                <th class="num" data-sort="depth">mailbox</th><th class="num" data-sort="processed">processed</th>
                <th class="num">msg/s</th><th class="num" data-sort="failures">failures</th>
                <th class="num" data-sort="restarts">restarts</th><th></th>
              </tr></thead>
              <tbody></tbody>
            </table>
          </section>
          <section class="wide" id="details" hidden>
            <h2>Actor <span id="details-name"></span></h2>
            <canvas id="chart-actor" width="1200" height="100"></canvas>
            <pre id="details-text"></pre>
            <div id="inspection" hidden>
              <p><button id="describe">describe</button> <span id="description"></span></p>
              <p><input id="test-message" type="text" placeholder="a test message, as the actor's definition reads it">
                 <button id="send-test-message">send</button> <span id="test-message-outcome" class="muted"></span></p>
            </div>
          </section>
          <section class="wide">
            <h2>Swift executors' job lanes, and modules' sections</h2>
            <table id="lanes"><thead><tr><th>lane</th><th>executor</th><th>state</th><th class="num">jobs run</th></tr></thead><tbody></tbody></table>
            <pre id="sections" class="muted"></pre>
            <div id="section-tables"></div>
          </section>
        </main>
        <script>
        "use strict";
        const token = new URLSearchParams(location.search).get("token") || "";
        const view = { sort: "processed", q: "", limit: 50 };
        const series = { messages: [], handler: [], mailbox: [] };
        const actorHistory = new Map();
        let selected = null;
        let latest = null;
        let socket = null;
        const $ = (id) => document.getElementById(id);
        const number = (n) => n == null ? "–" : Number(n).toLocaleString("en-US");

        function viewQuery() {
          return "sort=" + encodeURIComponent(view.sort) + "&q=" + encodeURIComponent(view.q) + "&limit=" + view.limit;
        }

        function connect() {
          const scheme = location.protocol === "https:" ? "wss:" : "ws:";
          socket = new WebSocket(scheme + "//" + location.host + "/ws?token=" + encodeURIComponent(token) + "&" + viewQuery());
          socket.onopen = () => { setConnection("live"); };
          socket.onclose = () => { setConnection("disconnected"); setTimeout(connect, 2000); };
          socket.onmessage = (event) => { render(merge(JSON.parse(event.data))); };
        }

        // The observer sends a whole document first, then only what changed ("delta": true):
        // system members to merge, the view or lanes whole, changed actor rows, and the order
        // of the rows when it changed (a row left out of it is gone).
        function merge(message) {
          if (!message.delta || !latest) return message;
          const doc = latest;
          doc.uptimeSeconds = message.uptimeSeconds;
          if (message.system) Object.assign(doc.system, message.system);
          if (message.view) doc.view = message.view;
          if (message.jobLanes) doc.jobLanes = message.jobLanes;
          if (message.actors || message.actorOrder) {
            const rows = new Map(doc.actors.map((a) => [a.id, a]));
            for (const a of message.actors || []) rows.set(a.id, a);
            doc.actors = (message.actorOrder || doc.actors.map((a) => a.id)).map((id) => rows.get(id));
          }
          return doc;
        }

        function setConnection(state) {
          const badge = $("connection");
          badge.textContent = state;
          badge.className = state;
        }

        function sendView() {
          if (socket && socket.readyState === WebSocket.OPEN) socket.send(viewQuery());
          for (const th of document.querySelectorAll("th[data-sort]")) th.classList.toggle("sorted", th.dataset.sort === view.sort);
        }

        function push(series, value) {
          series.push(value);
          while (series.length > 120) series.shift();
        }

        function render(doc) {
          latest = doc;
          const s = doc.system;
          $("system-name").textContent = s.name;
          $("uptime").textContent = number(doc.uptimeSeconds);
          $("messages-per-second").textContent = number(s.messagesPerSecond);
          $("handlers-started").textContent = number(s.handlersStarted);
          $("actor-count").textContent = number(s.actorCount);
          $("busy-workers").textContent = number(s.busyWorkers);
          $("dead-letters").textContent = number(s.deadLetters.total);
          $("stuck-handlers").textContent = number(s.stuckHandlers);
          $("stuck-figure").classList.toggle("warn", s.stuckHandlers > 0);
          $("dead-letters-figure").classList.toggle("warn", s.deadLetters.total > 0);
          const reasons = Object.entries(s.deadLetters).filter(([k, v]) => k !== "total" && v > 0);
          $("recent-failures").textContent = failureLines((s.recentFailures || []).slice(0, 5), "recent failures (newest first):\n");
          $("dead-letter-reasons").textContent = reasons.length ? "dead letters by reason: " + reasons.map(([k, v]) => k + " " + number(v)).join(", ") : "no dead letters";
          const now = Date.now();
          push(series.messages, [now, s.messagesPerSecond || 0]);
          push(series.handler, [now, s.recent ? s.recent.handlerDurationP99Us : 0]);
          push(series.mailbox, [now, s.recent ? s.recent.timeInMailboxP99Us : 0]);
          chart($("chart-messages"), [[series.messages, "#3056d3"]]);
          chart($("chart-workers"), [[series.mailbox, "#f79009"], [series.handler, "#12b76a"]]);
          renderWorkers(s.workers);
          renderLatency(s);
          renderActors(doc);
          renderLanes(doc.jobLanes, s.sections);
        }

        function cell(row, text, className) {
          const td = document.createElement("td");
          td.textContent = text;
          if (className) td.className = className;
          row.appendChild(td);
          return td;
        }

        function renderWorkers(workers) {
          const body = $("workers").tBodies[0];
          body.replaceChildren();
          for (const w of workers) {
            const row = document.createElement("tr");
            if (w.runningForMs != null && w.runningForMs >= 1000) row.className = "stuck";
            cell(row, (w.dedicated ? "d" : "") + w.index);
            cell(row, w.running || "idle", w.running ? "" : "muted");
            cell(row, w.messageType || "");
            cell(row, w.runningForMs == null ? "" : number(w.runningForMs) + " ms", "num");
            cell(row, number(w.handlersStarted), "num");
            body.appendChild(row);
          }
        }

        // The system's last failures, newest first (each: when, the actor, the decision, the error).
        function failureLines(failures, heading) {
          if (!failures.length) return "";
          return heading + failures.map((f) => "  " + f.atSeconds.toFixed(1) + " s  " + f.actor + " (" + f.action + ", failure " + f.failureCount + "): " + f.error).join("\n");
        }

        function renderLatency(s) {
          const body = $("latency").tBodies[0];
          body.replaceChildren();
          // Then the modules' histograms: a journal's write latency (how far the durable store
          // lags the actors), a connection pool's round trips.
          const rows = [["time in mailbox", s.timeInMailbox], ["handler duration", s.handlerDuration]];
          for (const section of s.sections || []) {
            for (const [name, h] of Object.entries(section.histograms || {})) {
              rows.push([section.kind + (section.instance ? " " + section.instance : "") + ": " + name, h]);
            }
          }
          for (const [name, h] of rows) {
            const row = document.createElement("tr");
            row.dataset.histogram = name;
            cell(row, name);
            cell(row, number(h.count), "num");
            for (const key of ["p50Us", "p90Us", "p99Us", "maxUs"]) cell(row, h[key] == null ? "–" : number(Math.round(h[key] * 10) / 10), "num");
            body.appendChild(row);
          }
        }

        function renderActors(doc) {
          $("matching").textContent = "(" + number(doc.actors.length) + " shown of " + number(doc.view.matching) + " matching)";
          const body = $("actors").tBodies[0];
          body.replaceChildren();
          const running = new Set(doc.system.workers.filter((w) => w.runningForMs != null && w.runningForMs >= 1000).map((w) => w.runningID));
          for (const a of doc.actors) {
            const row = document.createElement("tr");
            row.dataset.actorId = String(a.id);
            if (running.has(a.id)) row.classList.add("stuck");
            if (selected === a.id) row.classList.add("selected");
            cell(row, a.address, "name");
            const family = cell(row, "", "family");
            if (a.parent != null) family.appendChild(link("parent", "id:#" + a.parent, "its parent, #" + a.parent));
            family.appendChild(link("children", "parent:#" + a.id, "the actors " + a.address + " spawned"));
            cell(row, a.type, "type").title = a.type;
            cell(row, a.state, "state");
            cell(row, a.depth == null ? (a.pending ? "some" : "0") : number(a.depth), "depth num");
            cell(row, number(a.processed), "processed num");
            cell(row, a.rate == null ? "–" : number(a.rate), "rate num");
            cell(row, number(a.failures), "failures num");
            cell(row, number(a.restarts), "restarts num");
            const actions = cell(row, "");
            const stop = document.createElement("button");
            stop.className = "stop";
            stop.textContent = "stop";
            stop.addEventListener("click", (event) => { event.stopPropagation(); act(a.id, "stop", stop); });
            actions.appendChild(stop);
            if (a.restartable) {
              const restart = document.createElement("button");
              restart.className = "restart";
              restart.textContent = "restart";
              restart.addEventListener("click", (event) => { event.stopPropagation(); act(a.id, "restart", restart); });
              actions.appendChild(restart);
            }
            row.addEventListener("click", () => { selected = a.id; renderDetails(); renderActors(latest); });
            body.appendChild(row);
            const series = actorHistory.get(a.id) || [];
            push(series, [Date.now(), a.depth == null ? 0 : a.depth, a.rate || 0]);
            actorHistory.set(a.id, series);
          }
          renderDetails();
        }

        function renderDetails() {
          const a = latest && latest.actors.find((x) => x.id === selected);
          $("details").hidden = !a;
          if (!a) return;
          $("details-name").textContent = a.address;
          const series = actorHistory.get(a.id) || [];
          chart($("chart-actor"), [[series.map(([t, d]) => [t, d]), "#3056d3"], [series.map(([t, d, r]) => [t, r]), "#12b76a"]]);
          const h = a.handlerDuration;
          $("details-text").textContent =
            "type " + a.type + " (messages: " + a.messageType + "), " + a.state + "\n" +
            "mailbox " + (a.depth == null ? "not counted (pending: " + a.pending + ")" : a.depth) + " (blue), msg/s (green)\n" +
            "processed " + number(a.processed) + ", failures " + a.failures + ", restarts " + a.restarts + "\n" +
            (h && h.count ? "handler p50 " + h.p50Us + " µs, p99 " + h.p99Us + " µs over " + number(h.count) + " samples" : "no per-actor histogram (Introspection.perActorHistograms is off, or nothing sampled yet)") +
            failureLines((latest.system.recentFailures || []).filter((f) => f.id === a.id), "\nlast failures:\n");

          const inspection = $("inspection");
          if (inspection.dataset.actorId !== String(a.id)) {
            // Another actor: what was shown of the previous one goes.
            inspection.dataset.actorId = String(a.id);
            $("description").textContent = "";
            $("test-message-outcome").textContent = "";
            if (a.inspectable) describe(a.id);
          }
          inspection.hidden = !a.inspectable;
        }

        // The actor's own description (InspectableActor), asked on the actor.
        async function describe(id) {
          $("description").textContent = "…";
          const response = await fetch("/api/actors/" + id + "/describe", { headers: { "Authorization": "Bearer " + token } });
          const answer = await response.json().catch(() => ({ error: "HTTP " + response.status }));
          if ($("inspection").dataset.actorId === String(id)) $("description").textContent = answer.description ?? answer.error;
        }

        async function sendTestMessage(id, text) {
          const response = await fetch("/api/actors/" + id + "/message?text=" + encodeURIComponent(text),
                                       { method: "POST", headers: { "Authorization": "Bearer " + token } });
          const answer = await response.json().catch(() => ({ error: "HTTP " + response.status }));
          $("test-message-outcome").textContent = answer.outcome ? "sent: " + answer.outcome : answer.error;
          if (response.ok) describe(id);
        }

        function renderLanes(lanes, sections) {
          const body = $("lanes").tBodies[0];
          body.replaceChildren();
          for (const lane of lanes) {
            const row = document.createElement("tr");
            cell(row, lane.address);
            cell(row, lane.executor);
            cell(row, lane.state);
            cell(row, number(lane.jobsRun), "num");
            body.appendChild(row);
          }
          $("sections").textContent = sections.map((s) => s.kind + (s.instance ? " " + s.instance : "") + ": " +
            Object.entries(s.values).map(([k, v]) => k + " " + number(v)).join(", ")).join("\n");
          renderSectionTables(sections);
        }

        // Modules' tables (a cluster's members, say): a column named …_total is a counter, shown
        // with its rate per second since the previous document.
        let previousCounters = new Map(), previousCountersAt = 0;
        function renderSectionTables(sections) {
          const now = Date.now(), seconds = (now - previousCountersAt) / 1000;
          const counters = new Map();
          const holder = $("section-tables");
          holder.replaceChildren();
          for (const s of sections) {
            for (const t of s.tables || []) {
              const title = document.createElement("h3");
              title.textContent = s.kind + (s.instance ? " " + s.instance : "") + ": " + t.name;
              const table = document.createElement("table");
              table.className = "section-table";
              table.dataset.name = t.name;
              const head = document.createElement("tr");
              for (const column of t.columns) {
                const th = document.createElement("th");
                th.textContent = column;
                head.appendChild(th);
                if (column.endsWith("_total")) {
                  const rate = document.createElement("th");
                  rate.textContent = column.slice(0, -"_total".length) + "/s";
                  head.appendChild(rate);
                }
              }
              table.createTHead().appendChild(head);
              const body = table.createTBody();
              for (const cells of t.rows) {
                const row = document.createElement("tr");
                t.columns.forEach((column, index) => {
                  if (column === "actor" || column === "actors") actorsCell(row, cells[index] ?? "");
                  else cell(row, cells[index] ?? "");
                  if (!column.endsWith("_total")) return;
                  const key = s.kind + "\u0000" + s.instance + "\u0000" + t.name + "\u0000" + cells[0] + "\u0000" + column;
                  // An empty cell (no association to a member that is down) has no rate.
                  const value = cells[index] === "" || cells[index] == null ? null : Number(cells[index]);
                  if (value != null) counters.set(key, value);
                  const before = previousCounters.get(key);
                  const rate = value != null && before != null && value >= before && seconds > 0 ? (value - before) / seconds : null;
                  cell(row, rate == null ? "–" : number(Math.round(rate)), "num rate");
                });
                body.appendChild(row);
              }
              holder.append(title, table);
            }
          }
          previousCounters = counters;
          previousCountersAt = now;
        }

        // A section's "actor" or "actors" column holds addresses as shown (name#ID, separated by
        // spaces): each links to that actor in the table above.
        function actorsCell(row, text) {
          const td = cell(row, "", "actors");
          String(text).split(" ").forEach((part, index) => {
            if (index > 0) td.append(" ");
            const id = /^[^\s#]*#(\d+)$/.exec(part);
            if (id) td.appendChild(link(part, "id:#" + id[1], "show " + part + " in the actors' table"));
            else td.append(part);
          });
        }

        async function act(id, action, button) {
          button.disabled = true;
          const response = await fetch("/api/actors/" + id + "/" + action, { method: "POST", headers: { "Authorization": "Bearer " + token } });
          button.textContent = response.ok ? (action === "stop" ? "stopping" : "restarting") : "refused";
        }

        function chart(canvas, lines) {
          const context = canvas.getContext("2d");
          const width = canvas.width, height = canvas.height;
          context.clearRect(0, 0, width, height);
          const now = Date.now(), span = 60000;
          let top = 1;
          for (const [series] of lines) for (const [t, v] of series) if (now - t <= span) top = Math.max(top, v);
          context.strokeStyle = "#e4e7ec";
          context.beginPath(); context.moveTo(0, height - 0.5); context.lineTo(width, height - 0.5); context.stroke();
          context.fillStyle = "#667085";
          context.font = "11px system-ui";
          context.fillText(number(Math.round(top)), 4, 12);
          for (const [series, color] of lines) {
            context.strokeStyle = color;
            context.lineWidth = 2;
            context.beginPath();
            let first = true;
            for (const [t, v] of series) {
              if (now - t > span) continue;
              const x = width - (now - t) / span * width;
              const y = height - 2 - v / top * (height - 16);
              if (first) { context.moveTo(x, y); first = false; } else context.lineTo(x, y);
            }
            context.stroke();
          }
        }

        // A link in a row that searches for `query` (an actor's parent, or its children).
        function link(text, query, title) {
          const anchor = document.createElement("a");
          anchor.href = "#";
          anchor.textContent = text;
          anchor.title = title;
          anchor.addEventListener("click", (event) => {
            event.preventDefault();
            event.stopPropagation();
            $("search").value = query;
            view.q = query;
            sendView();
          });
          return anchor;
        }

        $("describe").addEventListener("click", () => { if (selected != null) describe(selected); });
        $("send-test-message").addEventListener("click", () => { if (selected != null) sendTestMessage(selected, $("test-message").value); });
        $("test-message").addEventListener("keydown", (event) => { if (event.key === "Enter" && selected != null) sendTestMessage(selected, event.target.value); });

        for (const th of document.querySelectorAll("th[data-sort]")) {
          th.addEventListener("click", () => { view.sort = th.dataset.sort; sendView(); });
        }
        $("search").addEventListener("input", (event) => { view.q = event.target.value; sendView(); });
        sendView();
        connect();
        </script>
        </body>
        </html>
        """#
}
