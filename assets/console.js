// The operator console. Everything received is put into the page as text (textContent), never
// as HTML: a dead letter's body and reason are whatever a queue held, a job's title and
// description whatever its employer wrote. Every piece of such outside text is isolated (<bdi>,
// `unicode-bidi: isolate`) and shows its bidi controls as marked escapes, so none can reorder
// the text around it. The access token lives in this closure only, never in localStorage,
// sessionStorage or a cookie; a reload signs in again.
(function () {
  "use strict";

  const REFRESH_MS = 5000;
  const PAGE_SIZE = 20;
  // setTimeout's longest delay, 2^31 − 1 ms (24.8 days): a longer one fires at once.
  const LONGEST_DELAY_MS = 2147483647;
  let token = null;
  let timer = null;
  let expiry = null;
  // When the token expires (ms since the epoch, by Date.now).
  let expiresAt = null;
  let page = 1;
  // The dead-letter figure last seen: the list is read again when it changes. (With SQS the
  // figure is the queue's approximate count, which may never equal the list's total.)
  let lastFigure = null;
  // Only the newest read of the list is drawn, whatever order the answers arrive in.
  let listRequest = 0;
  // When the figures shown were read (the page's clock, as text).
  let figuresTime = null;
  // The jobs waiting for review: the page shown, the newest read (as `listRequest`), when the
  // list shown was read, and the element drawn for each job with the job it was drawn from
  // (id → {seen, node}): a refresh keeps the elements of the jobs that did not change.
  let reviewPage = 1;
  let reviewRequest = 0;
  let reviewTime = null;
  let reviewNodes = new Map();
  // The job the reason is being written for: {job, index} while the dialog is open.
  let rejecting = null;

  const $ = (id) => document.getElementById(id);

  // An element with its text (never parsed as HTML) and children.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value;
      else if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child !== null && child !== undefined) {
        node.append(child instanceof Node ? child : document.createTextNode(String(child)));
      }
    }
    return node;
  }

  // A text is folded past this many characters or lines: its start in a <summary>, the whole
  // of it once opened, in a box of its own height (a mail server's refusal may run to 90 000
  // characters, stored before the store cut them).
  const FOLD_CHARS = 600;
  const FOLD_LINES = 8;
  const PREVIEW_CHARS = 160;

  // A text as received, in a `tag` element of class `cls`; folded when long (a <details>
  // of class `fold cls`, whose `.whole` holds the text).
  function shown(text, tag, cls) {
    text = String(text);
    const chars = Array.from(text);
    if (chars.length <= FOLD_CHARS && text.split("\n").length <= FOLD_LINES) {
      return outside(text, tag, cls);
    }
    const preview = chars.slice(0, PREVIEW_CHARS).join("").replace(/\s+/g, " ");
    return el(
      "details",
      { class: "fold " + cls },
      el(
        "summary",
        {},
        outside(preview, "span", "preview"),
        " …",
        el("span", { class: "muted small count", text: " " + chars.length.toLocaleString("en") + " characters" })
      ),
      outside(text, tag === "pre" ? "pre" : "div", "whole")
    );
  }

  // The bidi controls: embeddings and overrides (U+202A–U+202E), isolates (U+2066–U+2069) and
  // the marks (U+200E, U+200F, U+061C). Shown raw, an override in a reason would reorder the
  // text after it ("exe.fdp" read as "pdf.exe"); each is shown as its escape instead.
  const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/g;
  const CONTROL_NAMES = {
    "\u202A": "left-to-right embedding",
    "\u202B": "right-to-left embedding",
    "\u202C": "pop directional formatting",
    "\u202D": "left-to-right override",
    "\u202E": "right-to-left override",
    "\u2066": "left-to-right isolate",
    "\u2067": "right-to-left isolate",
    "\u2068": "first strong isolate",
    "\u2069": "pop directional isolate",
    "\u200E": "left-to-right mark",
    "\u200F": "right-to-left mark",
    "\u061C": "Arabic letter mark",
  };

  function escapeOf(c) {
    return "\\u{" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "}";
  }

  // Outside text for an attribute (an aria-label): its controls as escapes.
  function plain(text) {
    return String(text).replace(BIDI_CONTROLS, escapeOf);
  }

  // Outside text (anything the API passes on from users, mail servers or queues) in an element
  // of its own (a <bdi> unless `tag` says otherwise; every one is isolated, see .outside), its
  // bidi controls shown as marked escapes.
  function outside(text, tag, cls) {
    text = String(text);
    const node = el(tag || "bdi", { class: cls ? "outside " + cls : "outside" });
    let at = 0;
    for (const m of text.matchAll(BIDI_CONTROLS)) {
      if (m.index > at) node.append(text.slice(at, m.index));
      node.append(el("span", { class: "control", title: CONTROL_NAMES[m[0]], text: escapeOf(m[0]) }));
      at = m.index + m[0].length;
    }
    if (at < text.length) node.append(text.slice(at));
    return node;
  }

  // Shows the element `id` with these parts (strings, or nodes such as outside text).
  function show(id, ...parts) {
    const node = $(id);
    node.replaceChildren(...parts);
    node.hidden = false;
  }

  function hide(id) {
    $(id).hidden = true;
  }

  function when(value) {
    if (!value) return "";
    const d = new Date(value);
    return isNaN(d) ? String(value) : d.toLocaleString();
  }

  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }

  function age(seconds) {
    if (seconds === null || seconds === undefined) return "–";
    const s = Math.round(seconds);
    if (s < 120) return s + " s";
    if (s < 7200) return Math.round(s / 60) + " min";
    return Math.round(s / 3600) + " h";
  }

  // The problem's own words, or the status; for a 422, what it says of each field.
  async function problemText(res) {
    try {
      const p = await res.json();
      const fields = p.errors && typeof p.errors === "object" ? Object.entries(p.errors) : [];
      if (fields.length) return fields.map(([k, v]) => k + " " + [].concat(v).join(", ")).join("; ");
      return p.detail || p.title || "HTTP " + res.status;
    } catch (_) {
      return "HTTP " + res.status;
    }
  }

  class Gone extends Error {}

  const ENDED = "Signed out: the session has ended or the operator rights were taken away. Sign in again.";

  // A call of the API as the signed-in operator. /api/admin/* answers 404, never 401, to a
  // token that expired or lost its rights: a 404 is checked against /api/admin/queue, and if
  // that is 404 too, the page goes back to the sign-in form instead of saying "not found".
  async function api(method, path, body) {
    if (!token) throw new Gone();
    const headers = { Authorization: "Bearer " + token };
    const init = { method, headers, cache: "no-store" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    if (method !== "GET" && self.crypto && crypto.randomUUID) {
      headers["Idempotency-Key"] = crypto.randomUUID();
    }
    const res = await fetch(path, init);
    if (res.status === 401) {
      signOut(ENDED);
      throw new Gone();
    }
    if (res.status === 404 && path.startsWith("/api/admin/")) {
      const probe =
        path === "/api/admin/queue"
          ? res
          : await fetch("/api/admin/queue", { headers: { Authorization: "Bearer " + token }, cache: "no-store" });
      if (probe.status === 404) {
        signOut(ENDED);
        throw new Gone();
      }
    }
    return res;
  }

  // ------------------------------------------------------------------ sign-in

  async function signIn(event) {
    event.preventDefault();
    hide("signin-error");
    const email = $("email").value.trim();
    const password = $("password").value;
    if (!email || !password) {
      show("signin-error", "Give the email and the password.");
      return;
    }
    $("signin-submit").disabled = true;
    // The token's life is counted from before it was asked for, so the page never outlives it.
    const asked = Date.now();
    try {
      const res = await fetch("/api/auth/token", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ email, password }),
        cache: "no-store",
      });
      if (!res.ok) {
        $("password").value = "";
        show("signin-error", await problemText(res));
        return;
      }
      const issued = await res.json();
      const candidate = issued.access_token;
      const probe = await fetch("/api/admin/queue", {
        headers: { Authorization: "Bearer " + candidate },
        cache: "no-store",
      });
      if (probe.status === 404) {
        $("password").value = "";
        show("signin-error", "This account has no operator rights (jobboard admin grant ", outside(email), ").");
        return;
      }
      if (!probe.ok) {
        show("signin-error", await problemText(probe));
        return;
      }
      token = candidate;
      $("password").value = "";
      show("whoami", outside(email));
      $("signout").hidden = false;
      hide("signin");
      $("console").hidden = false;
      if (issued.expires_in > 0) {
        expiresAt = asked + issued.expires_in * 1000;
        armExpiry();
      }
      const f = renderFigures(await probe.json());
      lastFigure = f.dead_letters;
      await loadDeadLetters(1);
      await loadReviews(1);
      await loadFailing().catch(() => {});
      schedule();
      $("queue-title").focus();
    } catch (e) {
      if (!(e instanceof Gone)) show("signin-error", "The server could not be reached: " + e.message);
    } finally {
      $("signin-submit").disabled = false;
    }
  }

  // Signs out when the token expires: a timer of at most the longest delay setTimeout can
  // wait (a token may live 30 days), armed again for what the clock says is left when it fires.
  function armExpiry() {
    const left = expiresAt - Date.now();
    if (left <= 0) {
      signOut("Signed out: the session has expired. Sign in again.");
      return;
    }
    expiry = setTimeout(armExpiry, Math.min(left, LONGEST_DELAY_MS));
  }

  function signOut(message) {
    token = null;
    lastFigure = null;
    listRequest += 1;
    if (timer) clearTimeout(timer);
    if (expiry) clearTimeout(expiry);
    timer = null;
    expiry = null;
    expiresAt = null;
    if ($("confirm").open) $("confirm").close("no");
    rejecting = null;
    if ($("reject").open) $("reject").close();
    $("notice").textContent = "";
    figuresTime = null;
    markStale(null);
    reviewRequest += 1;
    reviewPage = 1;
    reviewTime = null;
    reviewNodes = new Map();
    markReviewStale(null);
    reviewNotice([], false);
    $("review-list").replaceChildren();
    $("console").hidden = true;
    hide("whoami");
    $("signout").hidden = true;
    $("dl-list").replaceChildren();
    failingRequest += 1;
    $("wh-list").replaceChildren();
    $("timeline").replaceChildren();
    hide("story");
    $("signin").hidden = false;
    if (message) show("signin-error", message);
    $("email").focus();
  }

  // ------------------------------------------------------------------ figures

  function renderFigures(f) {
    $("queue-kind").textContent = f.queue || "";
    for (const key of ["outbox_pending", "in_flight", "sent_last_hour", "failed_last_hour", "dead_letters"]) {
      const value = f[key];
      $("fig-" + key).textContent = value === null || value === undefined ? "–" : String(value);
    }
    $("fig-oldest_pending_age_seconds").textContent = age(f.oldest_pending_age_seconds);
    figuresTime = new Date().toLocaleTimeString();
    markStale(null);
    return f;
  }

  // The figures shown are no longer current (`why` says why they could not be read since) or
  // current again (null). Stale ones stay, dimmed and marked, with the time they were read.
  function markStale(why) {
    $("figures-stale").hidden = !why;
    $("figures").classList.toggle("stale", Boolean(why));
    $("figures-note").classList.toggle("stale-note", Boolean(why));
    $("figures-updated").textContent =
      (figuresTime ? "last updated " + figuresTime : "not yet read") + (why ? " — " + why : "");
  }

  async function loadFigures() {
    let res;
    try {
      res = await api("GET", "/api/admin/queue");
    } catch (e) {
      // fetch fails only when no answer came: the server, or the way to it, is down.
      if (!(e instanceof Gone)) markStale("cannot reach the server");
      throw e;
    }
    let f;
    try {
      if (!res.ok) throw new Error(await problemText(res));
      f = await res.json();
    } catch (e) {
      markStale("cannot read the figures: " + e.message);
      throw e;
    }
    return renderFigures(f);
  }

  // The next refresh, once this one has finished (a slow server never gets them stacked).
  function schedule() {
    if (timer) clearTimeout(timer);
    timer = setTimeout(async () => {
      await refresh();
      if (token) schedule();
    }, REFRESH_MS);
  }

  // The figures on their own; the dead letters too when their number changed; the jobs
  // waiting for review (no figure says when they change).
  async function refresh() {
    try {
      const f = await loadFigures();
      if (f.dead_letters !== lastFigure) {
        lastFigure = f.dead_letters;
        await loadDeadLetters(page);
      }
    } catch (e) {
      // A failed read of the figures is shown beside them (markStale); of the list, here.
      if (!(e instanceof Gone) && $("figures-stale").hidden) notice("The dead letters were not read: " + e.message, true);
    }
    if (!token) return;
    try {
      await loadReviews(reviewPage);
    } catch (_) {
      // Shown beside the list (markReviewStale), or the page has signed out.
    }
    if (!token) return;
    await loadFailing().catch(() => {});
  }

  // ------------------------------------------------------------------ failing webhook endpoints

  // Only the newest read of the failing endpoints is drawn.
  let failingRequest = 0;

  // Reads the failing webhook endpoints and draws them; a failed read says so in the notice.
  async function loadFailing() {
    const mine = ++failingRequest;
    let res;
    try {
      res = await api("GET", "/api/admin/webhooks/failing");
    } catch (e) {
      if (!(e instanceof Gone) && mine === failingRequest) notice("The failing webhook endpoints were not read: " + e.message, true);
      throw e;
    }
    if (!res.ok) {
      if (mine === failingRequest) notice(await problemText(res), true);
      return;
    }
    const list = await res.json();
    if (mine !== failingRequest) return;
    $("wh-total").textContent = String(list.items.length);
    $("wh-empty").hidden = list.items.length !== 0;
    $("wh-list").replaceChildren(...list.items.map(failingItem));
  }

  function failingItem(w) {
    const state = w.disabled_reason
      ? el("span", { class: "chip bad", text: "disabled" })
      : w.paused
        ? el("span", { class: "chip", text: "paused" })
        : el("span", { class: "chip bad", text: "failing" });
    const last = w.last_attempt_at
      ? [
          "Last attempt " + when(w.last_attempt_at) + ": ",
          w.last_status !== null ? "HTTP " + w.last_status : "no answer",
          ".",
        ]
      : ["No attempt recorded."];
    return el(
      "li",
      { class: "endpoint", "data-endpoint-id": String(w.id) },
      el("p", { class: "head" }, state, " ", outside(w.url, "span", "mono")),
      el("p", { class: "detail" }, "Endpoint " + w.id + " of ", outside(w.company_name), " (company " + w.company_id + ")."),
      w.disabled_reason ? el("p", { class: "detail" }, "Stopped: ", outside(w.disabled_reason), ".") : null,
      el(
        "p",
        { class: "detail" },
        (w.failing_since ? "Failing since " + when(w.failing_since) + "; " : "") +
          (w.last_success_at ? "last success " + when(w.last_success_at) : "never a success") +
          "; " +
          (w.pending === 1 ? "1 delivery" : w.pending + " deliveries") +
          " waiting."
      ),
      el("p", { class: "detail" }, ...last),
      w.last_error ? shown(w.last_error, "pre", "last-error") : null
    );
  }

  // ------------------------------------------------------------------ dead letters

  // Reads page `want` of the dead letters and draws it, unless a newer read began meanwhile.
  async function loadDeadLetters(want) {
    const mine = ++listRequest;
    const res = await api("GET", "/api/admin/dead-letters?page=" + want + "&page_size=" + PAGE_SIZE);
    if (!res.ok) {
      if (mine === listRequest) notice(await problemText(res), true);
      return;
    }
    const list = await res.json();
    if (mine !== listRequest) return;
    if (list.items.length === 0 && want > 1) {
      // Past the end (letters went away): the last page there is.
      return loadDeadLetters(Math.max(1, Math.ceil(list.total / PAGE_SIZE)));
    }
    page = want;
    $("dl-total").textContent = String(list.total);
    $("dl-empty").hidden = list.total !== 0;
    $("redrive-all").disabled = list.total === 0;
    $("dl-list").replaceChildren(...list.items.map(letterItem));
    const pages = Math.max(1, Math.ceil(list.total / PAGE_SIZE));
    $("dl-page").textContent = "page " + page + " of " + pages;
    $("dl-prev").disabled = page <= 1;
    $("dl-next").disabled = page >= pages;
  }

  // Another page, asked for with the pager at the foot of the list: the new page is read from
  // its top, so the list's heading is scrolled into view and takes the focus (the letters
  // follow it; the pager is the next stop of Tab after them).
  async function turnPage(want) {
    await loadDeadLetters(want);
    const heading = $("dl-title");
    heading.scrollIntoView({ block: "start" });
    heading.focus({ preventScroll: true });
  }

  function letterItem(d) {
    const event = d.event_id
      ? el("button", { type: "button", class: "link event-link", "aria-label": "Show the story of event " + plain(d.event_id) }, outside(d.event_id))
      : el("span", { class: "muted", text: "not an event" });
    if (d.event_id) event.addEventListener("click", () => openStory(d.event_id, true));
    const label = d.event_id ? "the dead letter of event " + plain(d.event_id) : "dead letter " + plain(d.id);
    const redrive = el("button", { type: "button", class: "redrive", text: "Redrive", "aria-label": "Redrive " + label });
    redrive.addEventListener("click", () =>
      redriveIds([d.id], d.event_id ? ["the dead letter of event ", outside(d.event_id)] : ["dead letter ", outside(d.id)])
    );
    const purge = el("button", { type: "button", class: "purge danger", text: "Purge", "aria-label": "Purge " + label });
    purge.addEventListener("click", () => purgeOne(d));
    return el(
      "li",
      { class: "letter", "data-id": d.id },
      el(
        "header",
        {},
        event,
        el("span", { class: "muted small", text: d.attempts + (d.attempts === 1 ? " attempt" : " attempts") }),
        el("span", { class: "muted small", text: "last failed " + when(d.last_failed_at) })
      ),
      shown(d.reason, "p", "reason"),
      shown(d.body, "pre", "body"),
      el("div", { class: "actions" }, redrive, purge)
    );
  }

  // Asks first; resolves to whether the operator confirmed.
  // `parts`: strings, or nodes such as outside text.
  function confirmed(...parts) {
    const dialog = $("confirm");
    $("confirm-text").replaceChildren(...parts);
    dialog.returnValue = "";
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes"), { once: true });
      dialog.showModal();
    });
  }

  function notice(text, bad) {
    const node = $("notice");
    node.textContent = text;
    node.className = bad ? "notice error" : "notice";
  }

  // `label`: what the letter is called in the question, as parts (see `confirmed`).
  async function redriveIds(ids, label) {
    const all = ids === null;
    const question = all
      ? ["Redrive every dead letter? Their emails are sent again."]
      : ["Redrive ", ...label, "? Its email is sent again."];
    if (!(await confirmed(...question))) return;
    try {
      const res = await api("POST", "/api/admin/dead-letters/redrive", all ? { all: true } : { ids });
      if (!res.ok) {
        notice(await problemText(res), true);
        return;
      }
      const r = await res.json();
      let text = "Redriven: " + r.redriven + ".";
      if (r.not_found) text += " Not found (already gone): " + r.not_found + ".";
      if (r.skipped_invalid) text += " Left alone, not events: " + r.skipped_invalid + ".";
      notice(text, false);
      await afterWrite();
    } catch (e) {
      if (!(e instanceof Gone)) notice("Not redriven: " + e.message, true);
    }
  }

  async function purgeOne(d) {
    const label = d.event_id ? ["the dead letter of event ", outside(d.event_id)] : ["this dead letter (not an event)"];
    if (!(await confirmed("Purge ", ...label, "? It is deleted for good and never sent."))) return;
    try {
      const res = await api("DELETE", "/api/admin/dead-letters/" + encodeURIComponent(d.id));
      if (res.status === 204) notice("Purged.", false);
      else if (res.status === 404) notice("Already gone.", false);
      else notice(await problemText(res), true);
      await afterWrite();
    } catch (e) {
      if (!(e instanceof Gone)) notice("Not purged: " + e.message, true);
    }
  }

  // The figures, the list and the story read again; the focus goes to the list's heading, since
  // the button that was pressed may be gone.
  async function afterWrite() {
    const f = await loadFigures();
    lastFigure = f.dead_letters;
    await loadDeadLetters(page);
    $("dl-title").focus();
    const shown = $("story").hidden ? null : $("story").dataset.eventId;
    if (shown) await openStory(shown, false);
  }

  // ------------------------------------------------------------------ jobs waiting for review

  // A reason's length limit, and the space the server trims from both ends first (Rust's
  // `str::trim`: Unicode's White_Space, which is not quite what String.prototype.trim removes).
  const REASON_MAX = 1000;
  const EDGE_SPACE = /^\p{White_Space}+|\p{White_Space}+$/gu;

  // The list shown is no longer current (`why` says why it could not be read since) or current
  // again (null): kept, dimmed and marked, beside the time it was read, like the figures.
  function markReviewStale(why) {
    $("review-stale").hidden = !why;
    $("review-list").classList.toggle("stale", Boolean(why));
    $("review-note").classList.toggle("stale-note", Boolean(why));
    $("review-updated").textContent =
      (reviewTime ? "last updated " + reviewTime : "not yet read") + (why ? " — " + why : "");
  }

  // A message of the review section: `parts` are strings or nodes (outside text).
  function reviewNotice(parts, bad) {
    const node = $("review-notice");
    node.replaceChildren(...parts);
    node.className = bad ? "notice error" : "notice";
  }

  // Reads page `want` of the jobs waiting for review (oldest first) and draws it, unless a newer
  // read began meanwhile. A read that fails leaves the list shown, marked stale.
  async function loadReviews(want) {
    const mine = ++reviewRequest;
    let res;
    try {
      res = await api("GET", "/api/admin/jobs?status=pending_review&page=" + want + "&page_size=" + PAGE_SIZE);
    } catch (e) {
      if (!(e instanceof Gone) && mine === reviewRequest) markReviewStale("cannot reach the server");
      throw e;
    }
    let list;
    try {
      if (!res.ok) throw new Error(await problemText(res));
      list = await res.json();
    } catch (e) {
      if (mine === reviewRequest) markReviewStale("cannot read the list: " + e.message);
      return;
    }
    if (mine !== reviewRequest) return;
    if (list.items.length === 0 && want > 1) {
      // Past the end (jobs were decided meanwhile): the last page there is.
      return loadReviews(Math.max(1, Math.ceil(list.total / PAGE_SIZE)));
    }
    reviewPage = want;
    reviewTime = new Date().toLocaleTimeString();
    markReviewStale(null);
    drawReviews(list);
  }

  // Draws a page of the list. A job unchanged since the last read keeps its element, so that a
  // refresh every 5 seconds leaves an opened description open and the focus where it was; the
  // list is rebuilt only when a job came, went or changed.
  function drawReviews(list) {
    $("review-total").textContent = String(list.total);
    $("review-empty").hidden = list.total !== 0;
    const pages = Math.max(1, Math.ceil(list.total / PAGE_SIZE));
    $("review-page").textContent = "page " + reviewPage + " of " + pages;
    $("review-prev").disabled = reviewPage <= 1;
    $("review-next").disabled = reviewPage >= pages;
    const kept = new Map();
    const nodes = list.items.map((job) => {
      const seen = JSON.stringify(job);
      const before = reviewNodes.get(job.id);
      const node = before && before.seen === seen ? before.node : jobItem(job);
      kept.set(job.id, { seen, node });
      return node;
    });
    reviewNodes = kept;
    const ol = $("review-list");
    const current = Array.from(ol.children);
    if (current.length === nodes.length && current.every((n, i) => n === nodes[i])) return;
    const focused = document.activeElement;
    const within = focused && ol.contains(focused);
    const at = within ? current.findIndex((n) => n.contains(focused)) : -1;
    ol.replaceChildren(...nodes);
    if (!within) return;
    // The focus was in the list: back where it was if that is still drawn, else on the job now
    // in that place (or the section's heading), without scrolling the page under the operator.
    if (focused.isConnected) focused.focus({ preventScroll: true });
    else focusJob(at, false);
  }

  // The focus on the title of the job now at `index` in the list (the next one once a job was
  // decided), else on the section's heading; `scroll`: brought into view.
  function focusJob(index, scroll) {
    const items = $("review-list").children;
    const target = items.length
      ? items[Math.min(Math.max(index, 0), items.length - 1)].querySelector("h3")
      : $("review-title");
    if (scroll) target.scrollIntoView({ block: "nearest" });
    target.focus({ preventScroll: true });
  }

  // Another page, from the pager at the list's foot: read from its top, like the dead letters.
  async function turnReviewPage(want) {
    await loadReviews(want);
    const heading = $("review-title");
    heading.scrollIntoView({ block: "start" });
    heading.focus({ preventScroll: true });
  }

  function money(n) {
    return Number(n).toLocaleString("en");
  }

  // A job as the operator decides on it: title, company, location, what kind of job, salary,
  // when it was created and the date its members asked for, its description (folded when long),
  // Approve and Reject. Each text of the employer's is outside text.
  function jobItem(job) {
    const title = el("h3", { id: "review-job-" + job.id, tabindex: "-1" }, outside(job.title, "bdi", "title"));
    const facts = [
      "at ",
      outside(job.company && job.company.name, "bdi", "company"),
      " · ",
      outside(job.location, "bdi", "location"),
      job.remote ? " (remote)" : "",
      " · " + String(job.employment_type).replace(/_/g, " "),
    ];
    if (job.salary_min !== null || job.salary_max !== null) {
      const range =
        job.salary_min !== null && job.salary_max !== null
          ? money(job.salary_min) + "–" + money(job.salary_max)
          : job.salary_min !== null
            ? "from " + money(job.salary_min)
            : "up to " + money(job.salary_max);
      facts.push(" · salary " + range);
    }
    facts.push(" · job " + job.id + ", created ", el("time", { class: "created", datetime: job.created_at, text: when(job.created_at) }));
    if (job.expires_at) facts.push(", to expire " + when(job.expires_at));
    const name = "job " + job.id + ", " + plain(job.title);
    const approve = el("button", { type: "button", class: "approve", text: "Approve", "aria-label": "Approve " + name });
    const reject = el("button", { type: "button", class: "reject danger", text: "Reject", "aria-label": "Reject " + name });
    const index = () => Array.prototype.indexOf.call($("review-list").children, approve.closest("li"));
    approve.addEventListener("click", () => approveJob(job, index(), approve));
    reject.addEventListener("click", () => openReject(job, index()));
    return el(
      "li",
      { class: "job", "data-id": String(job.id) },
      title,
      el("p", { class: "facts muted small" }, ...facts),
      shown(job.description, "div", "description"),
      el("div", { class: "actions" }, approve, reject)
    );
  }

  // "job 12, <title> at <company>", as parts (see `confirmed`).
  function jobLabel(job) {
    return ["job " + job.id + ", ", outside(job.title), " at ", outside(job.company && job.company.name)];
  }

  // After a decision, or an attempt that found the job decided already: the list read again,
  // and the focus on the next job (`index`: the decided one's place), or on the message when
  // it says what went wrong.
  async function afterReview(index, bad) {
    try {
      await loadReviews(reviewPage);
    } catch (e) {
      if (e instanceof Gone) return;
    }
    if (bad) $("review-notice").focus();
    else focusJob(index, true);
  }

  // The answer to an approval or a rejection that did not go through: 409, someone decided the
  // job first; 404, it is gone.
  async function refused(res, job, verb) {
    if (res.status === 409) {
      return [
        "Job " + job.id + ", ",
        outside(job.title),
        ", was not " + verb + ": it is no longer waiting for review, another operator may have decided it meanwhile (" +
          (await problemText(res)) +
          "). The list has been read again.",
      ];
    }
    if (res.status === 404) {
      return ["Job " + job.id + ", ", outside(job.title), ", was not " + verb + ": it no longer exists. The list has been read again."];
    }
    return ["Job " + job.id + " was not " + verb + ": " + (await problemText(res))];
  }

  async function approveJob(job, index, button) {
    if (!(await confirmed("Approve ", ...jobLabel(job), "? It opens now and anyone can find it."))) {
      // Its button may have gone with a refresh while the question was asked.
      if (!button.isConnected) focusJob(index, false);
      return;
    }
    button.disabled = true;
    try {
      const res = await api("POST", "/api/admin/jobs/" + encodeURIComponent(job.id) + "/approve");
      if (res.ok) {
        reviewNotice(["Approved ", ...jobLabel(job), ": it is open and in searches."], false);
        await afterReview(index, false);
      } else {
        reviewNotice(await refused(res, job, "approved"), true);
        await afterReview(index, true);
      }
    } catch (e) {
      if (!(e instanceof Gone)) {
        reviewNotice(["Not approved: " + e.message], true);
        $("review-notice").focus();
      }
    } finally {
      button.disabled = false;
    }
  }

  // The reason's length in code points once trimmed as the server trims it, or a problem with
  // it in words, checked before anything is sent.
  function reasonProblem(value) {
    if (value.includes("\0")) return "The reason must not contain NUL characters.";
    const length = Array.from(value.replace(EDGE_SPACE, "")).length;
    if (length === 0) return "Give a reason: the job's members read it, to know what to change.";
    if (length > REASON_MAX) {
      return "The reason is " + length.toLocaleString("en") + " characters long; at most " + REASON_MAX + ".";
    }
    return null;
  }

  function reasonLength() {
    const length = Array.from($("reject-reason").value.replace(EDGE_SPACE, "")).length;
    $("reject-length").textContent = length.toLocaleString("en");
    $("reject-help").classList.toggle("over", length > REASON_MAX);
  }

  function rejectError(text) {
    if (text) show("reject-error", text);
    else hide("reject-error");
    $("reject-reason").setAttribute("aria-invalid", text ? "true" : "false");
  }

  // Asks for the reason, in a dialog of its own: the text box has the focus.
  function openReject(job, index) {
    rejecting = { job, index };
    $("reject-question").replaceChildren(
      "Reject ",
      ...jobLabel(job),
      "? Its members are told why; an edit of theirs brings it back here."
    );
    $("reject-reason").value = "";
    reasonLength();
    rejectError(null);
    $("reject-submit").disabled = false;
    $("reject").showModal();
    $("reject-reason").focus();
  }

  async function submitReject(event) {
    event.preventDefault();
    const r = rejecting;
    if (!r) return;
    const reason = $("reject-reason").value;
    const problem = reasonProblem(reason);
    if (problem) {
      rejectError(problem);
      $("reject-reason").focus();
      return;
    }
    rejectError(null);
    $("reject-submit").disabled = true;
    try {
      const res = await api("POST", "/api/admin/jobs/" + encodeURIComponent(r.job.id) + "/reject", { reason });
      // The dialog may have been closed while the request was on its way: the answer is shown
      // all the same, in the section.
      const open = rejecting === r;
      if (res.status === 422) {
        // The server's own check: its words, in the dialog, the reason kept to be corrected.
        const words = "Not rejected: " + (await problemText(res));
        if (open) {
          rejectError(words);
          $("reject-reason").focus();
        } else {
          reviewNotice(["Job " + r.job.id + ". " + words], true);
        }
        return;
      }
      if (open) {
        rejecting = null;
        $("reject").close();
      }
      if (res.ok) {
        reviewNotice(["Rejected ", ...jobLabel(r.job), ": its members are told why."], false);
        await afterReview(r.index, false);
      } else {
        reviewNotice(await refused(res, r.job, "rejected"), true);
        await afterReview(r.index, true);
      }
    } catch (e) {
      if (!(e instanceof Gone) && rejecting === r) {
        rejectError("Not rejected: " + e.message);
        $("reject-reason").focus();
      }
    } finally {
      $("reject-submit").disabled = false;
    }
  }

  // Closed without a decision (Cancel, Escape): back to the job's Reject button, or, if a
  // refresh took it away meanwhile, to the job now in its place.
  function rejectClosed() {
    const r = rejecting;
    rejecting = null;
    if (!r || !token) return;
    const li = $("review-list").querySelector('li[data-id="' + r.job.id + '"]');
    if (li) li.querySelector(".reject").focus();
    else focusJob(r.index, false);
  }

  // ------------------------------------------------------------------ an event's story

  async function findStory(event) {
    event.preventDefault();
    const id = $("event-id").value.trim();
    if (!id) {
      show("story-error", "Give an event id.");
      return;
    }
    await openStory(id, true);
  }

  // Reads and draws the story of event `id`. `focus`: the operator asked for it (from the form,
  // or an event id in the list, which may be far below the story): the story is scrolled into
  // view and its heading takes the focus, so keyboard and screen-reader users land on it too.
  async function openStory(id, focus) {
    hide("story-error");
    $("event-id").value = id;
    // What was drawn (the story, or why there is none) is brought into view when asked for.
    const bring = (node) => {
      if (!focus) return;
      node.scrollIntoView({ block: "start" });
      node.focus({ preventScroll: true });
    };
    try {
      const res = await api("GET", "/api/admin/events/" + encodeURIComponent(id));
      if (res.status === 404) {
        hide("story");
        show("story-error", "Nothing is known of event ", outside(id), ".");
        bring($("story-error"));
        return;
      }
      if (!res.ok) {
        hide("story");
        show("story-error", await problemText(res));
        bring($("story-error"));
        return;
      }
      renderStory(await res.json());
      bring($("story-heading"));
    } catch (e) {
      if (!(e instanceof Gone)) {
        show("story-error", "Not read: " + e.message);
        bring($("story-error"));
      }
    }
  }

  // A step of the story; each detail is a string, a node, or a list of parts (strings and
  // nodes) making one sentence.
  function step(at, what, kind, ...details) {
    return {
      at,
      node: el(
        "li",
        { class: kind || "" },
        el("time", { text: at ? when(at) : "time unknown" }),
        el("span", { class: "what", text: what }),
        ...details
          .filter((d) => d)
          .map((d) => (d instanceof Node ? d : el("p", { class: "detail" }, ...(Array.isArray(d) ? d : [d]))))
      ),
    };
  }

  function renderStory(s) {
    const steps = [];
    const c = s.change;
    if (c) {
      const job = c.job_id
        ? ["job " + c.job_id, ...(c.job_title ? [" (", outside(c.job_title), ")"] : [])]
        : ["an application since deleted"];
      steps.push(
        step(
          c.at,
          "Status changed: " + (c.old_status || "none") + " → " + c.new_status,
          "",
          ["Application " + c.application_id + ", ", ...job, "."],
          "By user " + c.changed_by + (c.candidate_id ? "; the candidate is user " + c.candidate_id + "." : ".")
        )
      );
    }
    // A redrive forgot the failed sends before it: the worker's record counts from there.
    const r = s.redrive;
    if (r) {
      steps.push(
        step(
          r.last_at,
          "Redriven by an operator",
          "",
          (r.count === 1 ? "Put back on the queue once; " : "Put back on the queue " + r.count + " times, the last time here; ") +
            plural(r.attempts_before, "failed attempt") +
            (r.count === 1 ? " before it" : " before them") +
            ", no longer counted."
        )
      );
    }
    const since = r ? " since the redrive" : "";
    const p = s.processed;
    if (p) {
      if (p.first_failed_at) {
        steps.push(step(p.first_failed_at, "First failed send", "bad"));
      }
      const kind = p.status === "done" ? "good" : p.status === "dead" || p.status === "pending" ? "bad" : "";
      const what = {
        done: "Email sent",
        in_progress: "A worker holds it",
        pending: "Failed; waiting for a retry",
        missing: "Nothing sent: the application is gone",
        dead: "Given up: dead-lettered",
      }[p.status] || "Worker: " + p.status;
      // How it went, rather than a bare "0 attempts" for an email sent at once.
      let count;
      if (p.status === "done") {
        count =
          p.attempts === 0
            ? "Sent on the first try" + (r ? " after the redrive" : "") + "."
            : "Sent after " + plural(p.attempts, "failed attempt") + since + ".";
      } else if (p.attempts === 0) {
        count = "No failed send" + since + ", status " + p.status + ".";
      } else {
        count = plural(p.attempts, "attempt") + since + ", status " + p.status + ".";
      }
      steps.push(
        step(
          p.updated_at,
          what,
          kind,
          count,
          p.last_error ? shown(p.last_error, "pre", "last-error") : null,
          p.lease_expires_at ? "Lease until " + when(p.lease_expires_at) + "." : null
        )
      );
    } else if (c || r) {
      steps.push(step(null, r ? "No worker has taken the redriven copy yet" : "No worker has recorded it yet", ""));
    }
    const d = s.dead_letter;
    if (d) {
      const redrive = el("button", { type: "button", class: "redrive", text: "Redrive" });
      redrive.addEventListener("click", () => redriveIds([d.id], ["event ", outside(s.event_id)]));
      steps.push(
        step(
          d.last_failed_at,
          "In the dead letters",
          "bad",
          shown(d.reason, "p", "detail reason"),
          el("div", { class: "actions" }, redrive)
        )
      );
    }
    // Each webhook delivery: when it ended, or (still due) last, with its next try.
    for (const w of s.webhooks || []) {
      const what = {
        delivered: "Webhook delivered",
        failed: "Webhook given up",
        pending: w.attempts === 0 ? "Webhook waiting for its first try" : "Webhook failed; waiting for a retry",
      }[w.status] || "Webhook: " + w.status;
      const kind = w.status === "delivered" ? "good" : w.attempts > 0 ? "bad" : "";
      const answer =
        w.attempts === 0
          ? "Not tried yet"
          : plural(w.attempts, "attempt") + ", the last one " + (w.last_status !== null ? "answered HTTP " + w.last_status : "unanswered");
      steps.push(
        step(
          w.finished_at,
          what,
          kind,
          ["To ", outside(w.url), " (endpoint " + w.endpoint_id + ", company " + w.company_id + "), " + w.type + "."],
          answer + (w.status === "pending" ? "; next try " + when(w.next_attempt_at) : "") + ".",
          el("p", { class: "detail mono", text: "webhook-id " + w.webhook_id }),
          w.last_error && w.status !== "delivered" ? shown(w.last_error, "pre", "last-error") : null
        )
      );
    }
    // In time order; a step with no time (nothing recorded yet) comes last.
    const time = (x) => (x.at ? new Date(x.at).getTime() : Infinity);
    steps.sort((a, b) => time(a) - time(b) || 0);
    $("story").dataset.eventId = s.event_id;
    $("story-heading").replaceChildren("Event ", outside(s.event_id));
    $("timeline").replaceChildren(...steps.map((x) => x.node));
    $("story").hidden = false;
  }

  // ------------------------------------------------------------------ wiring

  $("signin-form").addEventListener("submit", signIn);
  $("signout").addEventListener("click", () => signOut(null));
  $("story-form").addEventListener("submit", findStory);
  // A failed read says so in the notice; a signed-out page says nothing more.
  const reading = (p) =>
    p.catch((e) => {
      if (!(e instanceof Gone)) notice("Not read: " + e.message, true);
    });
  $("dl-refresh").addEventListener("click", () =>
    reading(
      loadFigures().then((f) => {
        lastFigure = f.dead_letters;
        return loadDeadLetters(page);
      })
    )
  );
  $("redrive-all").addEventListener("click", () => redriveIds(null, null));
  $("wh-refresh").addEventListener("click", () => loadFailing().catch(() => {}));
  $("dl-prev").addEventListener("click", () => reading(turnPage(Math.max(1, page - 1))));
  $("dl-next").addEventListener("click", () => reading(turnPage(page + 1)));
  $("review-refresh").addEventListener("click", () => loadReviews(reviewPage).catch(() => {}));
  $("review-prev").addEventListener("click", () => turnReviewPage(Math.max(1, reviewPage - 1)).catch(() => {}));
  $("review-next").addEventListener("click", () => turnReviewPage(reviewPage + 1).catch(() => {}));
  $("reject-form").addEventListener("submit", submitReject);
  $("reject-reason").addEventListener("input", () => {
    reasonLength();
    if (!$("reject-error").hidden) rejectError(null);
  });
  $("reject-cancel").addEventListener("click", () => $("reject").close());
  $("reject").addEventListener("close", rejectClosed);
  $("email").focus();
})();
