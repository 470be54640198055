"""The script the page server adds to every page: the app's click handling, the trial's
layout operations replayed on the live DOM, and the page's Cumulative Layout Shift.

It is the JavaScript twin of chaoseval.engine.domops (the same operations, the same fields).
Each operation is reported to the server (a beacon) once its DOM change is made, which is when
its fault counts as delivered; every layout-shift entry (PerformanceObserver, entries without
recent input, as CLS counts them) is summed and reported too.
"""

SETTLE_MS = 120  # the page moves this long after its first paint, as a hydrating app does

SCRIPT = r"""
(() => {
  const cfg = JSON.parse(document.getElementById("chaoseval-config").textContent);
  const C = (window.__chaoseval = { cls: 0, shifts: 0, applied: [], last: null });
  const post = (path, body) =>
    fetch(cfg.base + path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      keepalive: true,
    });
  const beacon = (extra) =>
    post("beacon", Object.assign({ cls: C.cls, shifts: C.shifts }, extra)).catch(() => {});
  let pending = null;
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        if (!e.hadRecentInput) { C.cls += e.value; C.shifts += 1; }
      }
      clearTimeout(pending);
      pending = setTimeout(() => beacon({}), 40);
    }).observe({ type: "layout-shift", buffered: true });
  } catch (e) { /* no layout-shift entries in this browser: CLS stays unmeasured */ }

  const byId = (id) => document.getElementById(id);
  const done = (op, extra) => {
    C.applied.push(op.op);
    beacon(Object.assign({ fault: op.fault, op: op.op }, extra || {}));
  };
  const ACT = {
    order(op) {
      const els = op.ids.map(byId).filter(Boolean);
      const inPage = [...els].sort((a, b) =>
        a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1);
      const slots = inPage.map((el) => {
        const mark = document.createComment("slot");
        el.replaceWith(mark);
        return mark;
      });
      slots.forEach((mark, i) => mark.replaceWith(els[i]));
    },
    rename(op) {
      const el = byId(op.id);
      if (!el) return;
      el.id = op.to;
      if (op.label !== null && op.label !== undefined) {
        if (el.hasAttribute("aria-label")) el.setAttribute("aria-label", op.label);
        else el.textContent = op.label;
      }
    },
    class(op) {
      for (const el of document.querySelectorAll("." + CSS.escape(op.name))) {
        el.classList.replace(op.name, op.to);
      }
    },
    dialog(op) {
      const wrap = document.createElement("div");
      wrap.dataset.chaosevalOverlay = "";
      wrap.style.cssText = "position:fixed;inset:0;background:rgba(0,0,0,.45);" +
        "z-index:2147483000;display:flex;align-items:center;justify-content:center";
      const box = document.createElement("div");
      box.id = op.id;
      box.setAttribute("role", "dialog");
      box.setAttribute("aria-modal", "true");
      box.setAttribute("aria-labelledby", op.id + "-title");
      box.style.cssText = "background:#fff;padding:24px;max-width:420px;border-radius:8px";
      const h = document.createElement("h2");
      h.id = op.id + "-title";
      h.textContent = op.title;
      const p = document.createElement("p");
      p.textContent = op.body;
      const b = document.createElement("button");
      b.id = op.button_id;
      b.textContent = op.button;
      box.append(h, p, b);
      wrap.append(box);
      document.body.append(wrap);
    },
    viewport(op) {
      // The narrow layout: each action bar's content behind a menu button, as at first paint.
      for (const m of op.menus) {
        const anchor = byId(m.anchor);
        if (!anchor || !anchor.parentElement) continue;
        const bar = anchor.parentElement;
        const items = document.createElement("div");
        items.id = m.menu_id;
        items.hidden = !m.open;
        while (bar.firstChild) items.append(bar.firstChild);
        const toggle = document.createElement("button");
        toggle.id = m.toggle_id;
        toggle.setAttribute("aria-expanded", m.open ? "true" : "false");
        toggle.setAttribute("aria-controls", m.menu_id);
        toggle.setAttribute("aria-label", m.label);
        toggle.textContent = "\u2630";
        bar.append(toggle, items);
      }
    },
    banner(op) {
      const div = document.createElement("div");
      div.className = "chaoseval-banner";
      div.setAttribute("role", "status");
      div.style.cssText = "padding:40px 16px;background:#fff3cd;font-size:18px";
      div.textContent = op.text;
      document.body.prepend(div);
    },
  };

  for (const op of cfg.ops) {
    // Before anything else: a responsive layout is there from the first paint.
    if (op.op === "viewport") { ACT.viewport(op); done(op, { width: window.innerWidth }); }
  }
  const now = [];
  for (const op of cfg.ops) {
    if (op.op === "viewport") continue;
    if (op.op === "slow") {
      // Out of the page before its first paint; back when its time comes.
      const held = op.ids.map(byId).filter(Boolean).map((el) => {
        const mark = document.createComment("loading");
        el.replaceWith(mark);
        return [mark, el];
      });
      setTimeout(() => { held.forEach(([mark, el]) => mark.replaceWith(el)); done(op); },
                 op.delay * 1000);
    } else if (op.op === "banner") {
      setTimeout(() => { ACT.banner(op); done(op); }, op.delay * 1000);
    } else {
      now.push(op);
    }
  }
  requestAnimationFrame(() => setTimeout(() => {
    for (const op of now) ACT[op.op](op);
    now.forEach(done);
  }, cfg.settle_ms));

  // The app: a click on a control acts on the world through the trial's click tool.
  const ROLES = new Set(["button", "link", "checkbox", "radio", "tab", "menuitem"]);
  const control = (el) => el.id && (el.tagName === "BUTTON" || el.tagName === "A" ||
    ROLES.has(el.getAttribute("role")) || (el.tagName === "INPUT" && el.type === "submit"));
  const status = byId("chaoseval-status");
  document.addEventListener("click", async (ev) => {
    let el = ev.target;
    while (el && el.nodeType === 1 && !control(el)) el = el.parentElement;
    if (!el || el.nodeType !== 1) return;
    ev.preventDefault();
    let res;
    try {
      res = await (await post("click", { element_id: el.id })).json();
    } catch (e) {
      res = { ok: false, error: String(e) };
    }
    C.last = res;
    status.dataset.outcome = res.ok ? "ok" : "error";
    status.textContent = res.ok ? (res.result.status || res.result.action) : res.error;
    if (res.ok && res.result.action === "dismiss") {
      const overlay = el.closest("[data-chaoseval-overlay]");
      if (overlay) overlay.remove();
    }
    if (res.ok && res.result.action === "menu") {
      const items = byId(el.getAttribute("aria-controls"));
      const open = el.getAttribute("aria-expanded") !== "true";
      el.setAttribute("aria-expanded", open ? "true" : "false");
      if (items) items.hidden = !open;
    }
  });
})();
"""
