#!/usr/bin/env python3
"""Drives TroupeObserver's live page in headless Chromium and checks what it shows.

Usage:
  scripts/observer-browser-test.py --url http://127.0.0.1:PORT --token T --parent-name sessions \
      --child-prefix session- --stop-match session-browser --screenshot PATH [--chromium chromium] [--timeout 60]

Checks, each printed as `ok: ...`; the first that fails prints `FAILED: ...` and exits 1:
  1. the page and /api/state refuse a missing or wrong token (401) and accept the right one;
  2. Chromium loads /?token=T, #connection says `live` and the actor table has rows;
  3. #handlers-started increases while the caller keeps the service under load;
  4. clicking th[data-sort=name] sorts the rows by name (ascending), th[data-sort=processed] by
     processed (descending), and the clicked header is the one with class `sorted`;
  5. the shop's `routes` table (a module's snapshot section) is drawn, with a rate for a cart
     route under the load;
  6. the `children` link in the row of --parent-name shows only its children (named
     --child-prefix…, and listed by /api/state?q=parent:#ID), and a child's `parent` link leads
     back to that one row;
  7. selecting a row matching --stop-match (an InspectableActor) shows its own description in
     #description, a test message typed in #test-message reaches it (the description then shows
     it, also in /api/actors/ID/describe), and a text it does not read is refused;
  8. typing --stop-match into #search filters the rows, and the stop button of a matching row
     stops that actor: /api/state no longer lists its id, and the page drops its row;
  9. the page threw no uncaught JavaScript exception;
and a PNG screenshot of the page is written to --screenshot (also when a check fails).

Chromium is driven through the DevTools protocol over --remote-debugging-pipe (NUL-terminated
JSON messages: we write on its fd 3, read its fd 4). Python's standard library only. Chromium is
killed at exit, whatever happens. Every wait is bounded by --timeout seconds.
"""

import argparse
import base64
import fcntl
import json
import os
import re
import select
import shutil
import signal
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request


class Failure(Exception):
    """A check failed; the message says what was expected and what was seen."""


def ok(message):
    print(f"ok: {message}", flush=True)


def shorten(value, limit=600):
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


# ---------------------------------------------------------------------------------------------
# Chromium over the DevTools pipe


class Browser:
    """One headless Chromium and one page (a flattened target session) driven over CDP."""

    def __init__(self, executable, timeout):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="observer-chromium-")
        self.log_path = os.path.join(self.profile, "chromium.log")
        self.pid = None
        self.next_id = 0
        self.buffer = b""
        self.session = None
        self.exceptions = []  # uncaught page exceptions (Runtime.exceptionThrown)
        self.console_errors = []  # console.error and failed loads, for failure reports
        self._launch(executable)

    def _launch(self, executable):
        path = shutil.which(executable)
        if path is None:
            raise Failure(f"no Chromium executable '{executable}' on PATH (apt-get install chromium)")
        to_chromium_read, to_chromium_write = os.pipe()
        from_chromium_read, from_chromium_write = os.pipe()
        # Chromium expects the pipe on fds 3 and 4: move the child's ends above them first, so
        # that the dup2s below cannot overwrite one another.
        child_in = fcntl.fcntl(to_chromium_read, fcntl.F_DUPFD_CLOEXEC, 10)
        child_out = fcntl.fcntl(from_chromium_write, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_chromium_read)
        os.close(from_chromium_write)
        args = [
            path, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
            "--disable-extensions", "--disable-background-networking", "--mute-audio",
            "--window-size=1280,900", f"--user-data-dir={self.profile}", "about:blank",
        ]
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
            (os.POSIX_SPAWN_DUP2, 1, 2),
            (os.POSIX_SPAWN_DUP2, child_in, 3),
            (os.POSIX_SPAWN_DUP2, child_out, 4),
        ]
        try:
            # Its own process group, so that close() kills its helper processes too.
            self.pid = os.posix_spawn(path, args, os.environ, file_actions=actions, setpgroup=0)
        finally:
            os.close(child_in)
            os.close(child_out)
        self.write_fd = to_chromium_write
        self.read_fd = from_chromium_read

    def close(self):
        """Asks Chromium to quit, then kills what is left of its process group, and removes
        its profile."""
        if self.pid is not None:
            try:
                self.timeout = 5
                self.call("Browser.close", page=False)
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline and os.waitpid(self.pid, os.WNOHANG) == (0, 0):
                    time.sleep(0.05)
            except (Failure, OSError):
                pass
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self.pid = None
            for fd in (self.write_fd, self.read_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def log_tail(self, lines=15):
        try:
            with open(self.log_path, errors="replace") as log:
                return "".join(log.readlines()[-lines:]).strip() or "(empty)"
        except OSError:
            return "(no log)"

    # -- the wire

    def _send(self, message):
        data = json.dumps(message).encode() + b"\0"
        while data:
            try:
                written = os.write(self.write_fd, data)
            except BrokenPipeError:
                raise Failure(f"Chromium closed the DevTools pipe; its output:\n{self.log_tail()}")
            data = data[written:]

    def _receive(self, deadline, waiting_for):
        """The next message from Chromium; Failure at the deadline or when the pipe closes."""
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failure(f"timed out waiting for Chromium's answer to {waiting_for}")
            readable, _, _ = select.select([self.read_fd], [], [], left)
            if not readable:
                continue
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise Failure(
                    f"Chromium closed the DevTools pipe while we waited for {waiting_for}; "
                    f"its output:\n{self.log_tail()}")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def _on_event(self, message):
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            description = details.get("exception", {}).get("description") or details.get("text")
            self.exceptions.append(f"{description} ({details.get('url', '')}:{details.get('lineNumber')})")
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            self.console_errors.append(" ".join(
                str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", [])))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            if entry.get("url", "").endswith("/favicon.ico"):
                return  # the browser's own request, without the token: a 401 is right
            self.console_errors.append(f"{entry.get('text')} {entry.get('url', '')}".strip())
        elif method in ("Inspector.targetCrashed", "Target.targetCrashed"):
            raise Failure("the page's renderer crashed")
        elif method == "Target.detachedFromTarget" and params.get("sessionId") == self.session:
            raise Failure("the page's target went away (detached)")

    def call(self, method, params=None, page=True, timeout=None):
        """Sends one command (to the page's session unless page=False) and returns its result;
        events that arrive in between are handled on the way."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if page:
            message["sessionId"] = self.session
        self._send(message)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._receive(deadline, method)
            if reply.get("id") == message["id"]:
                if "error" in reply:
                    raise Failure(f"{method} failed: {reply['error'].get('message')} {shorten(params)}")
                return reply.get("result", {})
            if "method" in reply:
                self._on_event(reply)

    # -- the page

    def open_page(self):
        """Creates a page target and attaches to it (flattened session)."""
        target = self.call("Target.createTarget", {"url": "about:blank"}, page=False)["targetId"]
        attached = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, page=False)
        self.session = attached["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(domain)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False})

    def navigate(self, url):
        result = self.call("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise Failure(f"loading {url} failed: {result['errorText']}")
        self.wait_for(f"{url} to finish loading", "document.readyState === 'complete'")

    def evaluate(self, expression):
        """The value of a JavaScript expression (promises awaited), or Failure if it throws."""
        result = self.call("Runtime.evaluate", {
            "expression": expression, "returnByValue": True, "awaitPromise": True,
            "timeout": self.timeout * 1000})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            description = details.get("exception", {}).get("description") or details.get("text")
            raise Failure(f"JavaScript threw: {description}\n  in: {shorten(expression)}")
        return result["result"].get("value")

    def wait_for(self, what, expression, interval=0.2):
        """Evaluates expression until it returns {done: true, ...} or a truthy non-dict value;
        returns that value. On timeout, Failure says what it waited for and the last value."""
        deadline = time.monotonic() + self.timeout
        seen = None
        while True:
            seen = self.evaluate(expression)
            done = seen.get("done") if isinstance(seen, dict) else seen
            if done:
                return seen
            if time.monotonic() >= deadline:
                raise Failure(f"waited {self.timeout:g} s for {what}; last saw: {shorten(seen)}")
            time.sleep(interval)

    def mouse_click(self, selector):
        """A real left click in the middle of the element (scrolled into view), after checking
        that the element, not something over it, is what the click would hit."""
        target = self.evaluate(f"""(() => {{
            const element = document.querySelector({json.dumps(selector)});
            if (!element) return null;
            element.scrollIntoView({{block: 'center', inline: 'center'}});
            const box = element.getBoundingClientRect();
            const x = box.left + box.width / 2, y = box.top + box.height / 2;
            const hit = document.elementFromPoint(x, y);
            return {{x, y, hits: !!hit && (hit === element || element.contains(hit)),
                     hit: hit ? hit.outerHTML.slice(0, 120) : null}};
        }})()""")
        if target is None:
            raise Failure(f"nothing on the page matches {selector}")
        if not target["hits"]:
            raise Failure(f"{selector} is covered: a click in its middle hits {target['hit']}")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {
                "type": kind, "x": target["x"], "y": target["y"], "button": "left",
                "clickCount": 0 if kind == "mouseMoved" else 1})

    def screenshot(self, path):
        data = base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])
        if not data.startswith(b"\x89PNG\r\n\x1a\n"):
            raise Failure("Page.captureScreenshot did not return a PNG")
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as file:
            file.write(data)
        return len(data)


# ---------------------------------------------------------------------------------------------
# The HTTP API through urllib


class Api:
    def __init__(self, url, token, timeout):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def address(self, path, **query):
        return f"{self.url}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")

    def request(self, path, method="GET", headers=None, **query):
        """(status, body as text) of one request; HTTP error statuses are answers, not errors."""
        request = urllib.request.Request(self.address(path, **query), method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read().decode(errors="replace"), response.headers
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace"), error.headers
        except (urllib.error.URLError, OSError) as error:
            raise Failure(f"{method} {self.address(path, **query)}: {error}")

    def state(self, **query):
        status, body, _ = self.request("/api/state", token=self.token, **query)
        if status != 200:
            raise Failure(f"/api/state answered {status}: {shorten(body)}")
        try:
            return json.loads(body)
        except ValueError:
            raise Failure(f"/api/state did not answer JSON: {shorten(body)}")

    def expect_status(self, description, expected, path, headers=None, **query):
        status, body, response_headers = self.request(path, headers=headers, **query)
        if status != expected:
            raise Failure(f"{description}: expected {expected}, got {status}: {shorten(body, 200)}")
        return body, response_headers


def number(text, what):
    """A number shown on the page ("1,234", "4.5"); Failure when it is not one."""
    cleaned = re.sub(r"[\s,\u00a0\u202f]", "", text or "")
    try:
        return float(cleaned)
    except ValueError:
        raise Failure(f"{what} is not a number: {text!r}")


# ---------------------------------------------------------------------------------------------
# The checks


# The visible rows of the actor table, read in one evaluation so that a re-render cannot mix
# two updates.
ROWS_JS = """Array.from(document.querySelectorAll('table#actors tbody tr[data-actor-id]'))
    .filter(row => row.offsetParent !== null)
    .map(row => {
        const cell = name => { const td = row.querySelector('td.' + name);
                               return td ? td.textContent.trim() : null; };
        return {id: row.dataset.actorId, name: cell('name'), type: cell('type'),
                processed: cell('processed'), stop: !!row.querySelector('button.stop')};
    })"""


def check_authentication(api):
    api.expect_status("GET / without a token", 401, "/")
    api.expect_status("GET / with a wrong token", 401, "/", token="wrong-" + os.urandom(4).hex())
    api.expect_status("GET /api/state without a token", 401, "/api/state")
    api.expect_status("GET /api/state with a wrong token", 401, "/api/state", token="wrong-" + os.urandom(4).hex())
    ok("GET / and /api/state answer 401 without a token or with a wrong one")
    body, headers = api.expect_status("GET /?token=T", 200, "/", token=api.token)
    content_type = headers.get("Content-Type", "")
    if "text/html" not in content_type:
        raise Failure(f"GET /?token=T: expected an HTML page, got Content-Type {content_type!r}")
    state_body, _ = api.expect_status("GET /api/state with Authorization: Bearer T", 200, "/api/state",
                                      headers={"Authorization": f"Bearer {api.token}"})
    state = json.loads(state_body)
    if not isinstance(state.get("system"), dict) or not isinstance(state.get("actors"), list):
        raise Failure(f"/api/state lacks 'system' or 'actors': {shorten(state_body)}")
    ok(f"GET /?token=T serves HTML; /api/state with a bearer token lists {len(state['actors'])} actors")


def check_page_live(browser, api):
    browser.navigate(api.address("/", token=api.token))
    seen = browser.wait_for("#connection to say 'live' and table#actors to have a row", f"""(() => {{
        const connection = document.querySelector('#connection');
        const rows = {ROWS_JS};
        return {{done: !!connection && connection.textContent.trim() === 'live' && rows.length > 0,
                 connection: connection ? connection.textContent.trim() : '(no #connection)',
                 rows: rows.length}};
    }})()""")
    ok(f"the page is live and shows {seen['rows']} actor rows")


def read_counter(browser, selector):
    text = browser.evaluate(f"""(() => {{
        const element = document.querySelector({json.dumps(selector)});
        return element ? element.textContent.trim() : null; }})()""")
    if text is None:
        raise Failure(f"the page has no {selector}")
    return number(text, selector)


def check_numbers_change(browser):
    for selector in ("#actor-count", "#messages-per-second", "#dead-letters", "#stuck-handlers"):
        read_counter(browser, selector)
    first = read_counter(browser, "#handlers-started")
    time.sleep(3)
    deadline = time.monotonic() + browser.timeout
    while True:
        second = read_counter(browser, "#handlers-started")
        if second > first:
            break
        if time.monotonic() >= deadline:
            raise Failure(f"#handlers-started stayed at {first:g} for {browser.timeout + 3:g} s "
                          f"(is the service under load, and does the page get updates?)")
        time.sleep(0.5)
    ok(f"#handlers-started went from {first:g} to {second:g}; the other counters are numbers")


def sorted_rows(browser, key, what, in_order):
    """Clicks th[data-sort=key], then waits until it alone has class `sorted` and the rows
    satisfy in_order(rows) (given the rows, returns None when in order, else a reason)."""
    browser.mouse_click(f"table#actors thead th[data-sort={key}]")
    deadline = time.monotonic() + browser.timeout
    while True:
        seen = browser.evaluate(f"""(() => ({{
            sorted: Array.from(document.querySelectorAll('table#actors thead th.sorted'))
                .map(th => th.dataset.sort || th.textContent.trim()),
            rows: {ROWS_JS}}}))()""")
        problem = None
        if seen["sorted"] != [key]:
            problem = f"the headers with class 'sorted' are {seen['sorted']}, not just [{key!r}]"
        else:
            problem = in_order(seen["rows"])
        if problem is None:
            return seen["rows"]
        if time.monotonic() >= deadline:
            raise Failure(f"waited {browser.timeout:g} s after clicking th[data-sort={key}] for {what}: {problem}")
        time.sleep(0.2)


def by_name(rows):
    names = [row["name"] for row in rows]
    if len(names) < 2:
        return f"only {len(names)} rows: {names}"
    # Code-point order, or the same ignoring case: either is "by name, ascending".
    if names == sorted(names) or names == sorted(names, key=str.casefold):
        return None
    return f"the names are not in ascending order: {names[:30]}"


def by_processed(rows):
    values = [row["processed"] for row in rows]
    if len(values) < 2:
        return f"only {len(values)} rows"
    numbers = [number(value, "a td.processed cell") for value in values]
    if all(a >= b for a, b in zip(numbers, numbers[1:])):
        return None
    return f"the processed counts are not non-increasing: {values[:30]}"


def check_sorting(browser):
    rows = sorted_rows(browser, "name", "the rows sorted by name", by_name)
    ok(f"sorted by name: {len(rows)} rows from {rows[0]['name']!r} to {rows[-1]['name']!r}")
    rows = sorted_rows(browser, "processed", "the rows sorted by processed, descending", by_processed)
    ok(f"sorted by processed: {len(rows)} rows from {rows[0]['processed']} down to {rows[-1]['processed']}")


def search(browser, text):
    found = browser.evaluate(f"""(() => {{
        const input = document.querySelector('input#search');
        if (!input) return false;
        input.focus();
        input.value = {json.dumps(text)};
        input.dispatchEvent(new Event('input', {{bubbles: true}}));
        return true; }})()""")
    if not found:
        raise Failure("the page has no input#search")


def api_has_actor(api, name, actor_id):
    actors = api.state(q=name, limit=500).get("actors", [])
    return any(str(actor.get("id")) == str(actor_id) for actor in actors)


def check_family(browser, api, parent_name, child_match):
    """The row of `parent_name` links to its children and each child's row back to it."""
    search(browser, parent_name)
    parent = browser.wait_for(f"the row of {parent_name!r}", f"""(() => {{
        const row = ({ROWS_JS}).find(row => (row.name || '').startsWith({json.dumps(parent_name + '#')}));
        return {{done: !!row, row: row || null}}; }})()""")["row"]
    clicked = browser.evaluate(f"""(() => {{
        const links = Array.from(document.querySelectorAll(
            'table#actors tbody tr[data-actor-id="{parent['id']}"] td.family a'));
        const children = links.find(link => link.textContent === 'children');
        if (!children) return false;
        children.click();
        return true; }})()""")
    if not clicked:
        raise Failure(f"the row of {parent['name']} has no children link in td.family")
    query = f"parent:#{parent['id']}"
    seen = browser.wait_for(f"the children of {parent['name']}, all named {child_match!r}*", f"""(() => {{
        const rows = {ROWS_JS};
        return {{done: document.querySelector('input#search').value === {json.dumps(query)}
                       && rows.length > 0 && rows.every(row => (row.name || '').startsWith({json.dumps(child_match)})),
                 rows: rows.map(row => row.name)}}; }})()""")
    listed = {str(actor["id"]) for actor in api.state(q=query, limit=500).get("actors", [])}
    shown = browser.evaluate(f"({ROWS_JS}).map(row => row.id)")
    if not set(shown) <= listed:
        raise Failure(f"the page shows children {sorted(set(shown) - listed)} that /api/state?q={query} does not list")
    ok(f"the children link of {parent['name']} shows its {len(seen['rows'])} children ({query})")
    child = shown[0]
    clicked = browser.evaluate(f"""(() => {{
        const links = Array.from(document.querySelectorAll(
            'table#actors tbody tr[data-actor-id="{child}"] td.family a'));
        const up = links.find(link => link.textContent === 'parent');
        if (!up) return false;
        up.click();
        return true; }})()""")
    if not clicked:
        raise Failure(f"the row of child {child} has no parent link in td.family")
    browser.wait_for(f"the parent link of child {child} to show {parent['name']}", f"""(() => {{
        const rows = {ROWS_JS};
        return {{done: rows.length === 1 && rows[0].id === {json.dumps(parent['id'])},
                 rows: rows.map(row => row.name)}}; }})()""")
    ok(f"the parent link of child {child} leads back to {parent['name']}")


def check_inspection(browser, api, match):
    """Selecting an inspectable actor shows its own description; a test message typed on the
    page reaches it (its description then shows it)."""
    search(browser, match)
    row = browser.wait_for(f"a row matching {match!r}", f"""(() => {{
        const row = ({ROWS_JS}).find(row => (row.name || '').includes({json.dumps(match)}));
        return {{done: !!row, row: row || null}}; }})()""")["row"]
    clicked = browser.evaluate(f"""(() => {{
        const row = document.querySelector('table#actors tbody tr[data-actor-id="{row['id']}"] td.name');
        if (!row) return false;
        row.click();
        return true; }})()""")
    if not clicked:
        raise Failure(f"the row of {row['name']} went away before it could be selected")
    described = browser.wait_for(f"the description of {row['name']}", """(() => {
        const inspection = document.querySelector('#inspection');
        const text = (document.querySelector('#description') || {}).textContent || '';
        return {done: !!inspection && !inspection.hidden && text.includes('cart'), text: text}; })()""")
    ok(f"selecting {row['name']} shows its own description: {described['text']!r}")
    item = "observer-" + os.urandom(3).hex()
    browser.evaluate(f"""(() => {{
        document.querySelector('input#test-message').value = {json.dumps('add ' + item)};
        document.querySelector('button#send-test-message').click(); }})()""")
    browser.wait_for(f"the test message 'add {item}' to be sent and shown in the description", f"""(() => {{
        const outcome = document.querySelector('#test-message-outcome').textContent;
        const text = document.querySelector('#description').textContent;
        return {{done: outcome.startsWith('sent') && text.includes({json.dumps(item)}), outcome: outcome, text: text}};
    }})()""")
    status, body, _ = api.request(f"/api/actors/{row['id']}/describe", token=api.token)
    if status != 200 or item not in body:
        raise Failure(f"/api/actors/{row['id']}/describe answered {status} without {item!r}: {shorten(body)}")
    ok(f"the test message 'add {item}' typed on the page reached {row['name']} (its description shows it)")
    browser.evaluate("""(() => {
        document.querySelector('input#test-message').value = 'explode now';
        document.querySelector('button#send-test-message').click(); })()""")
    browser.wait_for("a refused test message to say so", """(() => {
        const outcome = document.querySelector('#test-message-outcome').textContent;
        return {done: outcome.includes('refused'), outcome: outcome}; })()""")
    ok("a text the definition does not read is refused, and the page says so")


def check_failure(browser, api):
    """A failure made through the page (the selected session's `fail REASON`) shows in the
    system's recent failures and in the selected actor's own, as the API reports it."""
    reason = "observer-" + os.urandom(3).hex()
    browser.evaluate(f"""(() => {{
        document.querySelector('input#test-message').value = {json.dumps('fail ' + reason)};
        document.querySelector('button#send-test-message').click(); }})()""")
    browser.wait_for(f"the test message 'fail {reason}' to be sent", """(() => {
        const outcome = document.querySelector('#test-message-outcome').textContent;
        return {done: outcome.startsWith('sent'), outcome: outcome}; })()""")
    shown = browser.wait_for(f"the failure {reason!r} among the page's recent failures and the actor's own", f"""(() => {{
        const recent = (document.querySelector('#recent-failures') || {{}}).textContent || '';
        const own = (document.querySelector('#details-text') || {{}}).textContent || '';
        const reason = {json.dumps(reason)};
        return {{done: recent.includes('recent failures') && recent.includes(reason)
                       && own.includes('last failures:') && own.includes(reason),
                 recent: recent, own: own}}; }})()""")
    line = next(line for line in shown["recent"].splitlines() if reason in line)
    if "resume" not in line or "SessionFault" not in line:
        raise Failure(f"the recent failure does not say the decision and the error: {line!r}")
    failures = api.state().get("system", {}).get("recentFailures", [])
    matching = [f for f in failures if reason in f.get("error", "")]
    if len(matching) != 1 or matching[0].get("action") != "resume":
        raise Failure(f"/api/state's recentFailures has {len(matching)} entries for {reason!r}: {shorten(matching)}")
    ok(f"a failure made from the page is listed: {line.strip()!r}, and under the selected actor")


def check_section_table(browser, table_name, row_match):
    """A module's snapshot table is drawn with a rate beside each `_total` column."""
    seen = browser.wait_for(f"the {table_name!r} table with a row matching {row_match!r} and its rate", f"""(() => {{
        const table = document.querySelector('#section-tables table.section-table[data-name={json.dumps(table_name)}]');
        if (!table) return {{done: false, table: null}};
        const headers = Array.from(table.tHead.rows[0].cells).map(cell => cell.textContent);
        const row = Array.from(table.tBodies[0].rows).find(row => row.cells[0].textContent.includes({json.dumps(row_match)}));
        const rate = row ? row.querySelector('td.rate') : null;
        return {{done: !!rate && /^[0-9,]+$/.test(rate.textContent) && headers.some(h => h.endsWith('/s')),
                 headers: headers, row: row ? Array.from(row.cells).map(cell => cell.textContent) : null}};
    }})()""")
    ok(f"the {table_name!r} table shows {seen['row']} under {seen['headers']}")


def check_supervision(browser, api, child):
    """The supervision tree's table lists `child` with its actor, and that actor's link shows
    it, alone, in the actors' table (the row's id as the address says)."""
    row = browser.wait_for(f"the supervision table's row {child!r} with its actor's link", f"""(() => {{
        const tables = Array.from(document.querySelectorAll('#section-tables table.section-table[data-name="children"]'));
        for (const table of tables) {{
            const row = Array.from(table.tBodies[0].rows).find(row => row.cells[0].textContent === {json.dumps(child)});
            const link = row ? row.querySelector('a') : null;
            if (link) return {{done: true, cells: Array.from(row.cells).map(cell => cell.textContent), address: link.textContent}};
        }}
        return {{done: false, tables: tables.length}};
    }})()""")
    address = row["address"]
    actor_id = address.rsplit("#", 1)[1]
    if not api_has_actor(api, address.rsplit("#", 1)[0], actor_id):
        raise Failure(f"the supervision table names {address}, which /api/state does not list")
    clicked = browser.evaluate(f"""(() => {{
        for (const table of document.querySelectorAll('#section-tables table.section-table[data-name="children"]')) {{
            const row = Array.from(table.tBodies[0].rows).find(row => row.cells[0].textContent === {json.dumps(child)});
            const link = row ? row.querySelector('a') : null;
            if (link) {{ link.click(); return true; }}
        }}
        return false; }})()""")
    if not clicked:
        raise Failure(f"the supervision table's link to {address} went away before it could be clicked")
    browser.wait_for(f"the actors' table to show {address} alone", f"""(() => {{
        const rows = {ROWS_JS};
        return {{done: document.querySelector('input#search').value === {json.dumps("id:#" + actor_id)}
                       && rows.length === 1 && String(rows[0].id) === {json.dumps(actor_id)},
                 rows: rows.map(row => row.name)}}; }})()""")
    ok(f"the supervision table lists {row['cells']}; its link shows {address} in the actors' table")


def check_section_histogram(browser, name):
    """A module's histogram (the shop's request latency) is a row of the latency table with its
    percentiles."""
    seen = browser.wait_for(f"the latency table's row {name!r} with its percentiles", f"""(() => {{
        const row = document.querySelector('table#latency tbody tr[data-histogram={json.dumps(name)}]');
        const cells = row ? Array.from(row.cells).map(cell => cell.textContent) : null;
        return {{done: !!cells && /^[0-9,]+$/.test(cells[1]) && Number(cells[1].replace(/,/g, '')) > 0
                       && cells.slice(2).every(cell => /^[0-9,.]+$/.test(cell)),
                 cells: cells}}; }})()""")
    ok(f"the latency table shows {seen['cells']}")


def check_stop(browser, api, match):
    search(browser, match)
    seen = browser.wait_for(f"the rows filtered by {match!r}: at least one, all matching", f"""(() => {{
        const rows = {ROWS_JS};
        const match = {json.dumps(match.lower())};
        const matches = row => (row.name || '').toLowerCase().includes(match)
                            || (row.type || '').toLowerCase().includes(match);
        return {{done: rows.length > 0 && rows.every(matches)
                       && rows.some(row => (row.name || '').includes({json.dumps(match)})),
                 rows: rows.map(row => row.name + ' (' + row.type + ')')}};
    }})()""")
    ok(f"searching {match!r} shows {len(seen['rows'])} matching rows")

    victim = browser.evaluate(f"""(() => {{
        const row = ({ROWS_JS}).find(row => (row.name || '').includes({json.dumps(match)}));
        return row ? {{id: row.id, name: row.name, stop: row.stop}} : null; }})()""")
    if victim is None:
        raise Failure(f"the row whose name contains {match!r} went away before we could stop it")
    if not victim["stop"]:
        raise Failure(f"the row of {victim['name']} (id {victim['id']}) has no button.stop")
    if not api_has_actor(api, victim["name"], victim["id"]):
        raise Failure(f"/api/state?q={victim['name']} does not list id {victim['id']}, which the page shows")

    # Clicked from JavaScript, found by id in the same evaluation: a live table re-renders, and
    # a mouse click at coordinates read a moment earlier could hit another row's button.
    clicked = browser.evaluate(f"""(() => {{
        const button = document.querySelector(
            'table#actors tbody tr[data-actor-id="{victim['id']}"] button.stop');
        if (!button) return false;
        button.click();
        return true; }})()""")
    if not clicked:
        raise Failure(f"the row of {victim['name']} (id {victim['id']}) went away before the click")

    deadline = time.monotonic() + browser.timeout
    while api_has_actor(api, victim["name"], victim["id"]):
        if time.monotonic() >= deadline:
            raise Failure(f"{victim['name']} (id {victim['id']}) is still in /api/state "
                          f"{browser.timeout:g} s after clicking its stop button")
        time.sleep(0.25)
    ok(f"stopped {victim['name']} (id {victim['id']}) with its button; /api/state no longer lists it")
    browser.wait_for(f"the page to drop the row of {victim['name']} (id {victim['id']})", f"""(() => {{
        const rows = {ROWS_JS};
        return {{done: !rows.some(row => row.id === {json.dumps(victim['id'])}),
                 rows: rows.map(row => row.id + ' ' + row.name)}}; }})()""")
    ok(f"the page no longer shows {victim['name']}")


def member_rows_js():
    return """(() => {
        const table = document.querySelector('#section-tables table.section-table[data-name="members"]');
        if (!table) return null;
        const columns = Array.from(table.tHead.rows[0].cells).map(cell => cell.textContent);
        return Array.from(table.tBodies[0].rows).map(row => {
            const cells = Array.from(row.cells).map(cell => cell.textContent);
            return {member: cells[columns.indexOf('member')], status: cells[columns.indexOf('status')],
                    roundTrip: cells[columns.indexOf('round_trip_ms')]};
        });
    })()"""


def entity_rows_js():
    """The rows of the entity kind's `nodes` table (entities per node, and the durable store's
    queued operations and write p99: undefined when a column is missing), or null before it shows."""
    return """(() => {
        const table = document.querySelector('#section-tables table.section-table[data-name="nodes"]');
        if (!table) return null;
        const columns = Array.from(table.tHead.rows[0].cells).map(cell => cell.textContent);
        return Array.from(table.tBodies[0].rows).map(row => {
            const cells = Array.from(row.cells).map(cell => cell.textContent);
            return {node: cells[columns.indexOf('node')], active: parseInt(cells[columns.indexOf('active')], 10),
                    journalQueued: cells[columns.indexOf('journal_queued')],
                    writeP99: cells[columns.indexOf('write_p99_us')]};
        });
    })()"""


def check_cluster(browser, api, peers, killed_pid, killed_member, entity_total=None):
    """A node's page shows its peers alive with round trips (and, with `entity_total`, the entity
    kind's entities on each of the three nodes), then the one killed as down (and its entities
    gone from the table)."""
    browser.navigate(api.address("/", token=api.token))
    browser.wait_for("#connection to say 'live'", """(() => {
        const connection = document.querySelector('#connection');
        return {done: !!connection && connection.textContent.trim() === 'live'}; })()""")
    seen = browser.wait_for(f"the members table to show {peers} alive with round trips", f"""(() => {{
        const rows = {member_rows_js()} || [];
        const peers = {json.dumps(peers)};
        const alive = peers.every(peer => rows.some(row => row.member === peer && row.status === 'alive'
                                                        && /^[0-9]+[.][0-9]+$/.test(row.roundTrip)));
        return {{done: alive, rows: rows}}; }})()""")
    ok(f"the page's members table shows the peers alive: {seen['rows']}")
    if entity_total is not None:
        seen = browser.wait_for(f"the nodes table to show {entity_total} entities over 3 nodes", f"""(() => {{
            const rows = {entity_rows_js()} || [];
            const total = rows.reduce((sum, row) => sum + row.active, 0);
            // The demo kind is durable (an in-memory journal per node): a node holding entities
            // shows its journal's queue (a count) and its write p99 in microseconds.
            const lagShown = rows.every(row => row.active === 0 ||
                (/^[0-9]+$/.test(row.journalQueued || '') && /^[0-9]+$/.test(row.writeP99 || '')));
            return {{done: rows.length === 3 && total === {entity_total} && lagShown, rows: rows}}; }})()""")
        ok(f"the page's nodes table shows the entities and the journal lag per node: {seen['rows']}")
    os.kill(killed_pid, signal.SIGKILL)
    others = [peer for peer in peers if peer != killed_member]
    seen = browser.wait_for(f"{killed_member} (killed) to show as down, the others alive", f"""(() => {{
        const rows = {member_rows_js()} || [];
        const killed = rows.find(row => row.member === {json.dumps(killed_member)});
        const others = {json.dumps(others)}.every(peer => rows.some(row => row.member === peer && row.status === 'alive'));
        return {{done: !!killed && killed.status === 'down' && killed.roundTrip === '' && others, rows: rows}}; }})()""")
    ok(f"after SIGKILL of {killed_member}, the page shows it down and the others alive: {seen['rows']}")
    if entity_total is not None:
        seen = browser.wait_for(f"the nodes table to drop {killed_member}", f"""(() => {{
            const rows = {entity_rows_js()} || [];
            const gone = !rows.some(row => row.node.startsWith({json.dumps(killed_member + "#")}));
            return {{done: rows.length === 2 && gone, rows: rows}}; }})()""")
        ok(f"the nodes table no longer lists {killed_member}: {seen['rows']}")


def check_no_exceptions(browser):
    if browser.exceptions:
        raise Failure(f"the page threw {len(browser.exceptions)} uncaught exceptions (listed below)")
    ok("the page threw no uncaught JavaScript exception")


def take_screenshot(browser, path):
    search(browser, "")  # the whole table, not the search's rows
    browser.wait_for("the unfiltered table to have rows", f"({ROWS_JS}).length > 0")
    size = browser.screenshot(path)
    ok(f"screenshot written to {path} ({size} bytes)")


# ---------------------------------------------------------------------------------------------


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the observer's base URL, http://127.0.0.1:PORT")
    parser.add_argument("--token", required=True, help="the observer's token")
    parser.add_argument("--stop-match", help="search text matching a stoppable actor's name")
    parser.add_argument("--parent-name", help="the name of an actor that has children")
    parser.add_argument("--child-prefix", help="how the names of all its children begin")
    parser.add_argument("--supervised-child", help="a child id in a supervisor's `children` table (checked when given)")
    parser.add_argument("--cluster-peers", help="a cluster node's page instead of the shop's: its peers, HOST:PORT,...")
    parser.add_argument("--kill-pid", type=int, help="with --cluster-peers: the process of the peer to kill")
    parser.add_argument("--killed-member", help="with --cluster-peers: that peer's HOST:PORT")
    parser.add_argument("--entity-total", type=int,
                        help="with --cluster-peers: the entities the three nodes hold (their `nodes` table)")
    parser.add_argument("--screenshot", required=True, help="where to write a PNG of the page")
    parser.add_argument("--chromium", default="chromium", help="the Chromium executable (chromium)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds any one wait may take (60)")
    return parser.parse_args()


def interrupt(signum, frame):
    raise KeyboardInterrupt


def main():
    arguments = parse_arguments()
    # SIGTERM (a CI timeout, the caller's trap) unwinds like Ctrl-C, so Chromium gets killed.
    signal.signal(signal.SIGTERM, interrupt)
    started = time.monotonic()
    api = Api(arguments.url, arguments.token, arguments.timeout)
    browser = None
    try:
        check_authentication(api)
        browser = Browser(arguments.chromium, arguments.timeout)
        version = browser.call("Browser.getVersion", page=False)
        ok(f"{version.get('product')} started")
        browser.open_page()
        if arguments.cluster_peers:
            check_cluster(browser, api, arguments.cluster_peers.split(","), arguments.kill_pid, arguments.killed_member,
                          arguments.entity_total)
            check_no_exceptions(browser)
            browser.evaluate("document.querySelector('#section-tables').scrollIntoView()")
            take_screenshot(browser, arguments.screenshot)
            print(f"all cluster observer checks passed in {time.monotonic() - started:.1f} s", flush=True)
            return 0
        if not (arguments.stop_match and arguments.parent_name and arguments.child_prefix):
            raise Failure("--stop-match, --parent-name and --child-prefix are needed for the shop's page")
        check_page_live(browser, api)
        check_numbers_change(browser)
        check_sorting(browser)
        check_section_table(browser, "routes", "/cart/")
        check_section_histogram(browser, "http shop-service: request_latency")
        check_family(browser, api, arguments.parent_name, arguments.child_prefix)
        if arguments.supervised_child:
            check_supervision(browser, api, arguments.supervised_child)
        check_inspection(browser, api, arguments.stop_match)
        check_failure(browser, api)
        check_stop(browser, api, arguments.stop_match)
        check_no_exceptions(browser)
        take_screenshot(browser, arguments.screenshot)
    except Failure as failure:
        print(f"FAILED: {failure}", file=sys.stderr, flush=True)
        report_page(browser, arguments.screenshot)
        return 1
    except KeyboardInterrupt:
        print("FAILED: interrupted", file=sys.stderr)
        return 1
    finally:
        if browser is not None:
            browser.close()
    print(f"all observer browser checks passed in {time.monotonic() - started:.1f} s", flush=True)
    return 0


def report_page(browser, screenshot):
    """After a failure: the page's errors, and a screenshot of how it looked."""
    if browser is None or browser.session is None:
        return
    for title, lines in (("uncaught exceptions", browser.exceptions), ("console errors", browser.console_errors)):
        distinct = list(dict.fromkeys(lines))  # in order of first appearance
        if distinct:
            print(f"  the page's {title} ({len(lines)}, {len(distinct)} distinct):\n    "
                  + "\n    ".join(line.replace("\n", "\n      ") for line in distinct[:10]), file=sys.stderr)
    try:
        browser.timeout = min(browser.timeout, 10)
        browser.screenshot(screenshot)
        print(f"  the page at the failure: {screenshot}", file=sys.stderr)
    except Exception as error:  # the report must not hide the failure
        print(f"  (no screenshot: {error})", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
