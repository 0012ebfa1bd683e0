// coordhost admin page: reads the token-protected /v1 JSON API with the
// admin token in an Authorization header (never in a URL) and renders
// every value with textContent, never as HTML: group and member ids come
// from clients.
"use strict";
(function () {
  const storeKey = "coordhost.admin.token";
  const refreshMs = 5000;
  const describeConcurrency = 4;
  // Epoch and members need one describe per group: a refresh describes
  // the first describeLimit groups (and the selected one) only.
  const describeLimit = 200;
  const $ = (id) => document.getElementById(id);
  let token = null; // null: not connected; "" connects without a token
  let selected = null; // the group shown in the detail section
  let timer = null;
  let busy = false;
  let again = false; // a refresh was asked for while one ran

  class AuthError extends Error {}

  async function api(path) {
    const headers = { Accept: "application/json" };
    if (token) headers.Authorization = "Bearer " + token;
    const resp = await fetch(path, { headers, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" });
    let body = null;
    try { body = await resp.json(); } catch (_) { body = null; }
    const why = body && body.error ? ": " + body.error : "";
    if (resp.status === 401) throw new AuthError("the admin API refused the token" + why);
    if (!resp.ok) throw new Error(path + ": HTTP " + resp.status + why);
    return body;
  }

  const groupPath = (id) => "/v1/groups/" + encodeURIComponent(id);

  // mapLimit runs f(item, index) on every item with at most n calls in
  // flight.
  async function mapLimit(items, n, f) {
    const out = new Array(items.length);
    let next = 0;
    async function worker() {
      while (next < items.length) {
        const i = next++;
        out[i] = await f(items[i], i);
      }
    }
    await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
    return out;
  }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function row(cells) {
    const tr = document.createElement("tr");
    for (const c of cells) tr.appendChild(c instanceof Node ? c : el("td", c));
    return tr;
  }

  function setStatus(msg, isError) {
    const s = $("status");
    s.textContent = msg;
    s.className = isError ? "error" : "";
  }

  function tasks(list, label) {
    const ids = [];
    for (const t of list || []) for (const p of t.Partitions || []) ids.push(t.SubtopologyID + "_" + p);
    return ids.length ? label + ": " + ids.join(" ") : "";
  }

  function partitions(a) {
    return ((a && a.TopicPartitions) || []).map((tp) => (tp.Topic || "?") + ": " + (tp.Partitions || []).join(",")).join("; ");
  }

  function streamsTasks(a) {
    return [tasks(a.ActiveTasks, "active"), tasks(a.StandbyTasks, "standby"), tasks(a.WarmupTasks, "warm-up")]
      .filter(Boolean).join("; ");
  }

  // member is one row of the members table.
  const member = (m, epoch, process, assignment) =>
    ({ id: m.MemberID, epoch, client: m.ClientID, host: m.ClientHost, process, assignment });

  // summary reads one GET /v1/groups/{id} answer into the page's columns.
  function summary(d) {
    if (d.streams) {
      return {
        epoch: d.streams.Epoch,
        members: (d.streams.Members || []).map((m) => member(m, m.MemberEpoch,
          m.ProcessID + (m.InstanceID ? " / " + m.InstanceID : ""), streamsTasks(m.Assignment))),
      };
    }
    if (d.consumer) {
      return {
        epoch: d.consumer.Epoch,
        members: (d.consumer.Members || []).map((m) => member(m, m.MemberEpoch, m.InstanceID || "", partitions(m.Assignment))),
      };
    }
    const g = d.classic || {};
    const protocol = g.Protocol ? g.ProtocolType + "/" + g.Protocol : "";
    return {
      epoch: null, // DescribeGroups does not carry the generation
      members: (g.Members || []).map((m) => member(m, null, m.InstanceID || "",
        protocol + (m.MemberAssignment ? " (" + atob(m.MemberAssignment).length + " assignment bytes)" : ""))),
    };
  }

  const show = (v) => (v === null || v === undefined ? "–" : v);

  function renderGroups(groups, details) {
    const body = $("groups").tBodies[0];
    const rows = groups.map((g, i) => {
      const d = details[i];
      const s = d && !d.error ? summary(d) : null;
      const tr = row([el("td", g.group, "mono"), g.type, g.state,
        el("td", s ? show(s.epoch) : "–", "num"), el("td", s ? s.members.length : "–", "num"),
        d && d.error ? d.error : (d && d.assignor) || ""]);
      tr.dataset.group = g.group;
      if (g.group === selected) tr.className = "selected";
      tr.addEventListener("click", () => { selected = g.group; refresh(); });
      return tr;
    });
    body.replaceChildren(...rows);
    $("empty").hidden = groups.length > 0;
  }

  async function renderDetail(d) {
    const sec = $("detail");
    if (!d || d.error) { sec.hidden = true; return; }
    const s = summary(d);
    $("detail-title").textContent = d.group;
    $("detail-summary").textContent = d.type + " group, " + d.state + ", epoch " + show(s.epoch) + ", " +
      s.members.length + " member" + (s.members.length === 1 ? "" : "s") +
      (d.assignor ? ", assignor " + d.assignor : "") +
      (d.last_assignor_error ? ", last assignor error: " + d.last_assignor_error : "");
    $("members").tBodies[0].replaceChildren(...s.members.map((m) =>
      row([el("td", m.id, "mono"), el("td", show(m.epoch), "num"), m.client, m.host, m.process, el("td", m.assignment, "mono")])));
    const h = await api(groupPath(d.group) + "/history");
    $("history").tBodies[0].replaceChildren(...(h.targets || []).slice().reverse().map((t) => {
      const reasons = (t.reasons || []).map((r) => r.kind + (r.member ? " " + r.member : "") + (r.detail ? " (" + r.detail + ")" : ""));
      const moves = t.moves || [];
      const cold = moves.filter((m) => m.cold).length;
      return row([el("td", t.epoch, "num"), new Date(t.time).toLocaleTimeString(), reasons.join(", "),
        t.assignor + (t.version ? " " + t.version : ""),
        moves.length + (t.moves_not_listed ? t.moves_not_listed : 0) + " (" + cold + " cold)"]);
    }));
    $("events").replaceChildren(...(d.recent_events || []).map((e) => el("li", e)));
    sec.hidden = false;
  }

  // ms formats a duration in nanoseconds.
  const ms = (ns) => (ns / 1e6).toFixed(ns < 1e7 ? 2 : 0) + " ms";
  const mean = (sum, n) => (n > 0 ? (sum / n).toFixed(1) : "–");

  // renderAB fills the A/B section from one GET /v1/ab answer: per
  // assignor and role the means of its measured runs, and the split's arms.
  function renderAB(ab) {
    $("ab-note").textContent = ab.note || "";
    const stats = ab.assignors || [];
    $("ab-assignors").tBodies[0].replaceChildren(...(stats.length ? stats.map((a) => {
      const n = a.runs - a.failures - a.dropped; // measured runs
      return row([el("td", a.assignor, "mono"), a.role, el("td", a.runs, "num"), el("td", a.failures, "num"),
        el("td", a.dropped, "num"), el("td", mean(a.tasks_moved, n), "num"), el("td", mean(a.tasks_moved_process, n), "num"),
        el("td", mean(a.cold_hand_overs, n), "num"), el("td", mean(a.tasks_standbys_short, n), "num"),
        el("td", mean(a.warmups_open, n), "num"), el("td", mean(a.active_per_process_spread, n), "num"),
        el("td", n > 0 ? ms(a.compute_ns / n) : "–", "num")]);
    }) : [row([el("td", "No assignor has computed a target yet.")])]));
    const split = ab.split;
    $("ab-split-status").textContent = split ? "Split: " + split.status +
      (split.status === "ok" ? "" : " (at least 20 measured groups per arm are needed)") : "No group is split.";
    $("ab-split").hidden = !split;
    $("ab-split").tBodies[0].replaceChildren(...(split ? split.arms : []).map((a) =>
      row([a.arm, (a.assignors || []).join(", "), el("td", a.groups, "num"),
        (a.figures || []).map((f) => f.name + " " + f.mean.toFixed(2) + " [" + f.low.toFixed(2) + ", " + f.high.toFixed(2) + "]").join("; ")])));
  }

  // renderGroupAB lists the group's latest primary and shadow results.
  function renderGroupAB(ab, group) {
    const g = (ab && ab.groups || []).find((x) => x.group === group);
    const results = g ? [g.primary, ...(g.shadows || [])].filter(Boolean) : [];
    $("ab-group").tBodies[0].replaceChildren(...results.map((r) => {
      const m = r.metrics;
      const v = (f) => el("td", m ? f(m) : "–", "num");
      return row([el("td", r.assignor + (r.version ? " " + r.version : ""), "mono"), r.role + (g.arm ? " (" + g.arm + ")" : ""),
        el("td", r.epoch, "num"), v((x) => x.movement.moved + x.movement.new), v((x) => x.movement.cold),
        v((x) => x.standbys.tasks_short), v((x) => x.warmups.open), v((x) => x.balance.active_per_process.spread),
        v((x) => ms(x.compute_ns)), r.error || ""]);
    }));
    $("ab-group").hidden = results.length === 0;
  }

  async function refresh() {
    if (token === null) return;
    if (busy) { again = true; return; }
    busy = true;
    const asked = token;
    try {
      const groups = (await api("/v1/groups")).groups || [];
      const details = await mapLimit(groups, describeConcurrency, (g, i) =>
        i >= describeLimit && g.group !== selected ? null :
          api(groupPath(g.group)).catch((e) => { if (e instanceof AuthError) throw e; return { error: e.message }; }));
      const ab = await api("/v1/ab");
      if (token !== asked) return; // disconnected meanwhile: show nothing
      renderGroups(groups, details);
      renderAB(ab);
      const i = groups.findIndex((g) => g.group === selected);
      await renderDetail(i >= 0 ? details[i] : null);
      renderGroupAB(ab, selected);
      $("updated").textContent = "updated " + new Date().toLocaleTimeString() +
        (groups.length > describeLimit ? "; epoch and members of the first " + describeLimit + " groups" : "");
      setStatus("");
    } catch (e) {
      if (e instanceof AuthError) disconnect(e.message);
      else setStatus(e.message, true);
    } finally {
      busy = false;
    }
    if (again) { again = false; refresh(); }
  }

  function schedule() {
    clearInterval(timer);
    timer = $("auto").checked ? setInterval(refresh, refreshMs) : null;
  }

  function connect(t) {
    token = t;
    sessionStorage.setItem(storeKey, t);
    $("login").hidden = true;
    $("app").hidden = false;
    setStatus("loading…");
    schedule();
    refresh();
  }

  function disconnect(msg) {
    token = null;
    selected = null;
    sessionStorage.removeItem(storeKey);
    clearInterval(timer);
    $("groups").tBodies[0].replaceChildren();
    for (const id of ["ab-assignors", "ab-split", "ab-group"]) $(id).tBodies[0].replaceChildren();
    $("ab-note").textContent = "";
    $("ab-split-status").textContent = "";
    $("detail").hidden = true;
    $("app").hidden = true;
    $("login").hidden = false;
    setStatus(msg || "", Boolean(msg));
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("login").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const t = $("token").value;
      $("token").value = "";
      connect(t);
    });
    $("refresh").addEventListener("click", refresh);
    $("auto").addEventListener("change", schedule);
    $("logout").addEventListener("click", () => disconnect(""));
    const saved = sessionStorage.getItem(storeKey);
    if (saved !== null) connect(saved);
  });
})();
