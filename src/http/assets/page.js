"use strict";
const $ = (id) => document.getElementById(id);
let token = localStorage.getItem("firehose.token");
let me = null;
let source = null;
let lastEventId = null;
let received = 0;
let trendsAt = 0;

async function api(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  if (token) headers["Authorization"] = "Bearer " + token;
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await resp.text();
  const data = text ? JSON.parse(text) : null;
  if (!resp.ok) {
    const err = new Error(data && data.error ? data.error.message : resp.statusText);
    err.status = resp.status;
    throw err;
  }
  return data;
}

function text(el, value) { el.textContent = value; }

function statusItem(s, label) {
  const li = document.createElement("li");
  const meta = document.createElement("div");
  meta.className = "meta";
  const when = new Date(s.posted * 1000).toLocaleTimeString();
  meta.textContent = "@" + s.login + " · " + when + (s.lat !== undefined ? " · " + s.lat.toFixed(2) + "," + s.lon.toFixed(2) : "");
  if (label) {
    const b = document.createElement("span");
    b.className = "badge";
    b.textContent = label;
    li.appendChild(b);
  }
  const body = document.createElement("span");
  body.className = "message";
  body.textContent = s.repost_of ? "reposted status " + s.repost_of : s.message;
  li.appendChild(body);
  li.appendChild(meta);
  if (s.likes !== undefined) {
    const counts = document.createElement("div");
    counts.className = "meta counts";
    counts.textContent = "♥ " + s.likes + " · ⟲ " + s.reposts + " · ↩ " + s.replies;
    li.appendChild(counts);
  }
  if (token) li.appendChild(actions(s));
  return li;
}

/// Like, repost, reply and thread buttons for a status.
function actions(s) {
  const bar = document.createElement("div");
  bar.className = "actions";
  const target = s.repost_of || s.id;
  const button = (label, cls, fn) => {
    const b = document.createElement("button");
    b.className = "secondary " + cls;
    b.textContent = label;
    b.onclick = async () => {
      try { await fn(); } catch (e) { text($("post-msg"), e.message); }
    };
    bar.appendChild(b);
  };
  button("Like", "like", async () => { await api("POST", "/api/v1/statuses/" + target + "/like"); await refresh(); });
  button("Repost", "repost", async () => { await api("POST", "/api/v1/statuses/" + target + "/repost"); await refresh(); });
  button("Reply", "reply", async () => {
    replyTo = target;
    text($("reply-to"), "status " + target);
    $("replying").classList.remove("hidden");
    $("message").focus();
  });
  button("Thread", "thread", () => showThread(target));
  button("Bookmark", "bookmark", async () => {
    await api("POST", "/api/v1/statuses/" + target + "/bookmark");
    text($("post-msg"), "bookmarked");
    await loadBookmarks();
  });
  if (me && s.uid === me.id && !s.repost_of) {
    button("Edit", "edit", async () => {
      const message = window.prompt("Edit your status (within an hour of posting, at most 10 times)", s.message);
      if (message === null) return;
      await api("PATCH", "/api/v1/statuses/" + s.id, { message });
      await refresh();
    });
  }
  if (s.edited_at !== undefined) button("History", "versions", () => showVersions(s.id));
  button("Report", "report", async () => {
    await api("POST", "/api/v1/reports", { status_id: s.id, reason: "spam" });
    text($("post-msg"), "reported; an admin will look at it");
  });
  return bar;
}

let replyTo = null;

/// A status's versions, oldest first, in the thread panel.
async function showVersions(id) {
  const h = await api("GET", "/api/v1/statuses/" + id + "/history");
  $("conversation").replaceChildren(...h.versions.map((v, i) => {
    const li = document.createElement("li");
    const b = document.createElement("span");
    b.className = "badge";
    b.textContent = i === 0 ? "as posted" : "edit " + i;
    li.appendChild(b);
    const body = document.createElement("span");
    body.className = "message";
    body.textContent = v.message;
    li.appendChild(body);
    const meta = document.createElement("div");
    meta.className = "meta";
    meta.textContent = new Date(v.at * 1000).toLocaleTimeString();
    li.appendChild(meta);
    return li;
  }));
  $("thread").classList.remove("hidden");
}

async function loadBookmarks() {
  const page = await api("GET", "/api/v1/bookmarks?count=30");
  $("bookmark-list").replaceChildren(...page.statuses.map((s) => statusItem(s, "bookmarked")));
}
$("bookmarks-refresh").onclick = () => loadBookmarks().catch(() => {});

let newestNotif = null;

/// The notifications panel: grouped, with the unread count.
async function loadNotifications() {
  const [page, unread] = await Promise.all([
    api("GET", "/api/v1/notifications?grouped=true&count=30"),
    api("GET", "/api/v1/notifications/unread"),
  ]);
  text($("notif-unread"), String(unread.count));
  newestNotif = page.notifications.length ? page.notifications[0].id : null;
  const verbs = { like: "liked", repost: "reposted", follow: "followed you", follow_request: "asked to follow you",
    mention: "mentioned you", reply: "replied" };
  $("notif-list").replaceChildren(...page.notifications.map((g) => {
    const li = document.createElement("li");
    const who = g.accounts.map((a) => "@" + a.login).join(", ") + (g.count > g.accounts.length ? " and " + (g.count - g.accounts.length) + " others" : "");
    const line = document.createElement("span");
    line.className = "message";
    line.textContent = who + " " + (verbs[g.type] || g.type) + (g.status ? ": " + g.status.message : "");
    li.appendChild(line);
    const meta = document.createElement("div");
    meta.className = "meta";
    meta.textContent = new Date(g.latest_at * 1000).toLocaleTimeString();
    li.appendChild(meta);
    return li;
  }));
}
$("notif-read").onclick = async () => {
  if (!newestNotif) return;
  try { await api("POST", "/api/v1/notifications/read", { up_to: newestNotif }); await loadNotifications(); }
  catch (e) { text($("post-msg"), e.message); }
};

let openList = null;

async function loadLists() {
  const all = await api("GET", "/api/v1/lists");
  $("list-list").replaceChildren(...all.lists.map((l) => {
    const li = document.createElement("li");
    const name = document.createElement("span");
    name.className = "message";
    name.textContent = l.title + " (" + l.members + " members, id " + l.id + ")";
    li.appendChild(name);
    const open = document.createElement("button");
    open.className = "secondary list-open";
    open.textContent = "open";
    open.onclick = () => showList(l).catch((e) => text($("list-msg"), e.message));
    li.appendChild(open);
    const del = document.createElement("button");
    del.className = "secondary list-delete";
    del.textContent = "delete";
    del.onclick = async () => {
      try {
        await api("DELETE", "/api/v1/lists/" + l.id);
        if (openList && openList.id === l.id) $("list-open").classList.add("hidden");
        await loadLists();
      } catch (e) { text($("list-msg"), e.message); }
    };
    li.appendChild(del);
    return li;
  }));
}

async function showList(l) {
  openList = l;
  text($("list-head"), l.title);
  const list = await api("GET", "/api/v1/timelines/list/" + l.id + "?count=30");
  $("list-timeline").replaceChildren(...list.map((s) => statusItem(s)));
  $("list-open").classList.remove("hidden");
}

$("list-create").onclick = async () => {
  try {
    const l = await api("POST", "/api/v1/lists", { title: $("list-title").value });
    $("list-title").value = "";
    await loadLists();
    await showList(l);
  } catch (e) { text($("list-msg"), e.message); }
};
for (const [id, method] of [["list-add", "POST"], ["list-remove", "DELETE"]]) {
  $(id).onclick = async () => {
    if (!openList) return;
    const who = $("list-member").value.trim();
    try {
      const r = await api(method, "/api/v1/lists/" + openList.id + "/members", { ids: [who] });
      text($("list-msg"), r.results[who] ? "user " + who + " is a member" : "user " + who + " is not a member");
      await loadLists();
      await showList(openList);
    } catch (e) { text($("list-msg"), e.message); }
  };
}
$("list-stream").onclick = () => {
  if (!openList) return;
  $("stream-kind").value = "list";
  lastEventId = null; received = 0; $("events").replaceChildren();
  connect();
};
$("list-close").onclick = () => { openList = null; $("list-open").classList.add("hidden"); };

async function showThread(id) {
  const [ctx, status] = await Promise.all([
    api("GET", "/api/v1/statuses/" + id + "/context"),
    api("GET", "/api/v1/statuses/" + id),
  ]);
  const items = [...ctx.ancestors.map((s) => statusItem(s, "earlier")), statusItem(status, "this"),
    ...ctx.descendants.map((s) => statusItem(s, "reply"))];
  $("conversation").replaceChildren(...items);
  $("thread").classList.remove("hidden");
}

async function loadRequests() {
  const page = await api("GET", "/api/v1/follow_requests");
  const items = page.users.map((u) => {
    const li = document.createElement("li");
    const t = document.createElement("span");
    t.className = "message";
    t.textContent = "@" + u.login + " asks to follow you ";
    li.appendChild(t);
    for (const [label, verb] of [["Approve", "authorize"], ["Reject", "reject"]]) {
      const b = document.createElement("button");
      b.className = "secondary " + verb;
      b.textContent = label;
      b.onclick = async () => { await api("POST", "/api/v1/follow_requests/" + u.id + "/" + verb); await loadRequests(); };
      li.appendChild(b);
    }
    return li;
  });
  $("requests").replaceChildren(...items);
}

async function loadTrends() {
  const top = await api("GET", "/api/v1/trends/tags?window=3600&limit=10");
  $("trending").replaceChildren(...top.map((t) => {
    const li = document.createElement("li");
    li.textContent = "#" + t.tag + " (" + t.count + ")";
    return li;
  }));
}

// How far back a resume (and a history search) can reach on this server.
async function loadHistory() {
  const h = await api("GET", "/api/v1/history");
  const reach = $("history-reach");
  if (!h.oldest) { reach.textContent = "History: none yet (resumes reach the replay buffer)."; return; }
  const hours = (Date.now() / 1000 - h.oldest) / 3600;
  const span = hours >= 1 ? hours.toFixed(1) + " h" : Math.max(1, Math.round(hours * 60)) + " min";
  reach.textContent = "History: " + h.events.toLocaleString() + " events on disk, back to " +
    new Date(h.oldest * 1000).toLocaleString() + " (" + span + "); a reconnect resumes from there.";
}

// Without --demo, /api/v1/demo answers 404 and the page waits for a login.
let demoPass = null;
async function demoToken(fresh) {
  if (fresh || !demoPass || demoPass.expires_at - Date.now() / 1000 < 3600) {
    const resp = await fetch("/api/v1/demo");
    if (!resp.ok) throw new Error("no demo");
    demoPass = await resp.json();
  }
  return demoPass.token;
}

async function showDashboard() {
  if (token && me) {
    dashboard.start(async () => token);
    return;
  }
  try {
    await demoToken();
    text($("who"), "watching the demo world (read only): sign up or log in to post");
    dashboard.start(demoToken);
  } catch (e) {
    dashboard.stop();
    $("dashboard").classList.add("hidden");
  }
}

function showLoggedIn(on) {
  for (const id of ["compose", "people", "messages", "home", "live", "trends", "rules", "history", "groups", "lists", "bookmarks", "notifs"]) $(id).classList.toggle("hidden", !on);
  $("auth").classList.toggle("hidden", on);
  $("logout").classList.toggle("hidden", !on);
  text($("who"), on && me ? "@" + me.login + " (id " + me.id + ")" : "not logged in");
  showDashboard();
}

async function loadMe() {
  if (!token) return showLoggedIn(false);
  try {
    me = await api("GET", "/api/v1/me");
    showLoggedIn(true);
    $("private").checked = !!me.private;
    await refresh();
    await loadRequests();
    await loadTrends();
    loadHistory().catch(() => {});
    await loadConvs();
    await loadRules();
    await loadGroups();
    await loadLists();
    await loadBookmarks();
    await loadNotifications();
    await loadAdmin();
    watchMessages();
  } catch (e) {
    token = null;
    localStorage.removeItem("firehose.token");
    showLoggedIn(false);
  }
}

async function refresh() {
  const list = await api("GET", "/api/v1/timelines/home?count=30");
  const ul = $("timeline");
  ul.replaceChildren(...list.map((s) => statusItem(s)));
}

$("signup").onclick = async () => {
  try {
    await api("POST", "/api/v1/users", {
      login: $("su-login").value, name: $("su-name").value || $("su-login").value,
      email: $("su-email").value, password: $("su-password").value,
    });
    $("li-identifier").value = $("su-login").value;
    $("li-password").value = $("su-password").value;
    await login();
  } catch (e) { text($("auth-msg"), e.message); }
};

async function login() {
  try {
    const r = await api("POST", "/api/v1/sessions", { identifier: $("li-identifier").value, password: $("li-password").value });
    token = r.token;
    localStorage.setItem("firehose.token", token);
    text($("auth-msg"), "");
    await loadMe();
  } catch (e) { text($("auth-msg"), e.message); }
}
$("login").onclick = login;

$("logout").onclick = async () => {
  try { await api("DELETE", "/api/v1/sessions/current"); } catch (e) { /* already gone */ }
  disconnect();
  if (dmSource) { dmSource.close(); dmSource = null; }
  token = null; me = null;
  localStorage.removeItem("firehose.token");
  showLoggedIn(false);
};

$("post").onclick = async () => {
  const body = { message: $("message").value };
  if (replyTo) body.reply_to = replyTo;
  if ($("lat").value || $("lon").value) { body.lat = Number($("lat").value); body.lon = Number($("lon").value); }
  try {
    await api("POST", "/api/v1/statuses", body);
    $("message").value = "";
    replyTo = null;
    $("replying").classList.add("hidden");
    text($("post-msg"), "posted");
    await refresh();
  } catch (e) { text($("post-msg"), e.message); }
};

async function followAction(method) {
  const who = $("follow-login").value.trim();
  try {
    const user = await api("GET", "/api/v1/users/lookup?any=" + encodeURIComponent(who));
    const r = await api(method, "/api/v1/users/" + user.id + "/follow");
    text($("follow-msg"), (method === "POST" ? (r.requested ? "asked to follow @" : "following @") : "unfollowed @") + user.login);
    await refresh();
  } catch (e) { text($("follow-msg"), e.message); }
}
$("cancel-reply").onclick = () => { replyTo = null; $("replying").classList.add("hidden"); };
$("close-thread").onclick = () => $("thread").classList.add("hidden");
$("private").onchange = async () => {
  try {
    me = await api("PATCH", "/api/v1/me", { private: $("private").checked });
    await loadRequests();
  } catch (e) { text($("follow-msg"), e.message); }
};
/// Block, unblock, mute or unmute the user named in the follow box.
async function relationAction(kind, method) {
  const who = $("follow-login").value.trim();
  try {
    const user = await api("GET", "/api/v1/users/lookup?any=" + encodeURIComponent(who));
    const r = await api(method, "/api/v1/users/" + user.id + "/" + kind);
    const on = kind === "block" ? r.blocking : r.muting;
    const words = { block: ["blocked", "unblocked"], mute: ["muted", "unmuted"] }[kind];
    text($("follow-msg"), words[on ? 0 : 1] + " @" + user.login);
    await refresh();
  } catch (e) { text($("follow-msg"), e.message); }
}
$("block").onclick = () => relationAction("block", "POST");
$("unblock").onclick = () => relationAction("block", "DELETE");
$("mute").onclick = () => relationAction("mute", "POST");
$("unmute").onclick = () => relationAction("mute", "DELETE");

// Conversations: the list, one open thread, live arrival from a user
// stream of its own.
let openConv = null;
let dmSource = null;

function convName(c) {
  if (c.title) return c.title;
  return c.participants.filter((u) => !me || u.id !== me.id).map((u) => "@" + u.login).join(", ");
}

async function loadConvs() {
  const page = await api("GET", "/api/v1/conversations?count=50");
  $("convs").replaceChildren(...page.conversations.map((c) => {
    const li = document.createElement("li");
    li.className = "conv";
    li.dataset.id = c.id;
    const name = document.createElement("span");
    name.className = "message";
    name.textContent = convName(c);
    li.appendChild(name);
    if (c.unread) {
      const b = document.createElement("span");
      b.className = "badge unread";
      b.textContent = c.unread + " unread";
      li.appendChild(b);
    }
    const meta = document.createElement("div");
    meta.className = "meta";
    meta.textContent = c.last_message ? "@" + c.last_message.login + ": " + c.last_message.text : "";
    li.appendChild(meta);
    li.onclick = () => showConv(c.id).catch((e) => text($("dm-msg"), e.message));
    return li;
  }));
}

function messageItem(m) {
  const li = document.createElement("li");
  const body = document.createElement("span");
  body.className = "message";
  body.textContent = m.text;
  const meta = document.createElement("div");
  meta.className = "meta";
  meta.textContent = "@" + m.login + " · " + new Date(m.sent * 1000).toLocaleTimeString();
  li.append(body, meta);
  return li;
}

async function showConv(id) {
  const c = await api("POST", "/api/v1/conversations/" + id + "/read");
  const messages = await api("GET", "/api/v1/conversations/" + id + "/messages?count=50");
  openConv = c;
  text($("dm-head"), convName(c) + " (" + c.kind + ")");
  $("dm-leave").classList.toggle("hidden", c.kind !== "group");
  $("dm-thread").replaceChildren(...messages.reverse().map(messageItem));
  $("dm-open").classList.remove("hidden");
  await loadConvs();
}

$("dm-start").onclick = async () => {
  try {
    const ids = [];
    for (const login of $("dm-to").value.split(",").map((l) => l.trim()).filter((l) => l)) {
      ids.push((await api("GET", "/api/v1/users/lookup?any=" + encodeURIComponent(login))).id);
    }
    const body = { participants: ids, text: $("dm-first").value };
    if ($("dm-title").value.trim()) body.title = $("dm-title").value.trim();
    const c = await api("POST", "/api/v1/conversations", body);
    $("dm-first").value = "";
    text($("dm-msg"), "");
    await showConv(c.id);
  } catch (e) { text($("dm-msg"), e.message); }
};

$("dm-send").onclick = async () => {
  if (!openConv) return;
  try {
    await api("POST", "/api/v1/conversations/" + openConv.id + "/messages", { text: $("dm-text").value });
    $("dm-text").value = "";
    text($("dm-msg"), "");
  } catch (e) { text($("dm-msg"), e.message); }
};

$("dm-leave").onclick = async () => {
  if (!openConv) return;
  try {
    await api("POST", "/api/v1/conversations/" + openConv.id + "/leave");
    openConv = null;
    $("dm-open").classList.add("hidden");
    await loadConvs();
  } catch (e) { text($("dm-msg"), e.message); }
};
$("dm-close").onclick = () => { openConv = null; $("dm-open").classList.add("hidden"); };

function watchMessages() {
  if (dmSource) dmSource.close();
  dmSource = new EventSource("/api/v1/stream/user?" + new URLSearchParams({ access_token: token }));
  dmSource.addEventListener("direct_message", (ev) => {
    const m = JSON.parse(ev.data).message;
    if (openConv && m.conversation_id === openConv.id) {
      $("dm-thread").appendChild(messageItem(m));
      api("POST", "/api/v1/conversations/" + openConv.id + "/read").then(loadConvs).catch(() => {});
    } else {
      loadConvs().catch(() => {});
    }
  });
}

$("follow").onclick = () => followAction("POST");
$("unfollow").onclick = () => followAction("DELETE");
$("refresh").onclick = refresh;

$("stream-kind").onchange = () => $("filter-form").classList.toggle("hidden", $("stream-kind").value !== "filter");

/// The admin view, shown to a token with the admin scope.
async function loadAdmin() {
  const session = await api("GET", "/api/v1/sessions/current");
  const isAdmin = (session.scopes || []).includes("admin");
  $("admin").classList.toggle("hidden", !isAdmin);
  if (!isAdmin) return;
  const page = await api("GET", "/api/v1/admin/reports?count=50");
  $("admin-reports").replaceChildren(...page.reports.map((r) => {
    const li = document.createElement("li");
    const what = document.createElement("span");
    what.className = "message";
    what.textContent = r.reason + ": " + (r.status_id ? "status " + r.status_id : "user " + r.user_id) + " (by user " + r.reporter + ")" + (r.comment ? " — " + r.comment : "");
    li.appendChild(what);
    const bar = document.createElement("div");
    bar.className = "actions";
    for (const action of r.status_id ? ["none", "remove_status", "suspend_user"] : ["none", "suspend_user"]) {
      const b = document.createElement("button");
      b.className = "secondary resolve-" + action;
      b.textContent = action === "none" ? "dismiss" : action.replace("_", " ");
      b.onclick = async () => {
        try {
          await api("POST", "/api/v1/admin/reports/" + r.id + "/resolve", { action });
          text($("admin-msg"), "resolved: " + action);
          await loadAdmin();
        } catch (e) { text($("admin-msg"), e.message); }
      };
      bar.appendChild(b);
    }
    li.appendChild(bar);
    return li;
  }));
}

async function suspendAction(method) {
  try {
    const r = await api(method, "/api/v1/admin/users/" + encodeURIComponent($("admin-user").value.trim()) + "/suspend");
    text($("admin-msg"), r.suspended ? "suspended" : "not suspended");
  } catch (e) { text($("admin-msg"), e.message); }
}
$("admin-suspend").onclick = () => suspendAction("POST");
$("admin-unsuspend").onclick = () => suspendAction("DELETE");
$("admin-refresh").onclick = () => loadAdmin().catch((e) => text($("admin-msg"), e.message));
$("token-go").onclick = async () => {
  token = $("use-token").value.trim();
  localStorage.setItem("firehose.token", token);
  await loadMe();
};

let openGroup = null;

async function loadGroups() {
  const page = await api("GET", "/api/v1/groups?count=50");
  $("group-list").replaceChildren(...page.groups.map((g) => {
    const li = document.createElement("li");
    const name = document.createElement("span");
    name.className = "message";
    name.textContent = g.name + " (" + g.kind + ", " + g.members + " members, id " + g.id + ")";
    li.appendChild(name);
    const role = document.createElement("span");
    role.className = "badge";
    role.textContent = g.role || (g.requested ? "requested" : "-");
    li.appendChild(role);
    const open = document.createElement("button");
    open.className = "secondary group-open";
    open.textContent = "open";
    open.onclick = () => showGroup(g).catch((e) => text($("group-msg"), e.message));
    li.appendChild(open);
    const leave = document.createElement("button");
    leave.className = "secondary group-leave";
    leave.textContent = "leave";
    leave.onclick = async () => {
      try { await api("POST", "/api/v1/groups/" + g.id + "/leave"); await loadGroups(); }
      catch (e) { text($("group-msg"), e.message); }
    };
    li.appendChild(leave);
    return li;
  }));
}

async function showGroup(g) {
  openGroup = g;
  text($("group-head"), g.name);
  const list = await api("GET", "/api/v1/groups/" + g.id + "/statuses?count=30");
  $("group-timeline").replaceChildren(...list.map((s) => statusItem(s)));
  $("group-open").classList.remove("hidden");
}

$("group-create").onclick = async () => {
  try {
    const g = await api("POST", "/api/v1/groups", { name: $("group-name").value, kind: $("group-kind").value });
    text($("group-msg"), "created " + g.name + " (id " + g.id + ")");
    $("group-name").value = "";
    await loadGroups();
    await showGroup(g);
  } catch (e) { text($("group-msg"), e.message); }
};
$("group-join").onclick = async () => {
  try {
    const m = await api("POST", "/api/v1/groups/" + encodeURIComponent($("group-join-id").value.trim()) + "/join");
    text($("group-msg"), m.member ? "joined" : "asked to join; an owner or moderator decides");
    await loadGroups();
  } catch (e) { text($("group-msg"), e.message); }
};
$("group-post").onclick = async () => {
  if (!openGroup) return;
  try {
    await api("POST", "/api/v1/statuses", { message: $("group-message").value, group_id: openGroup.id });
    $("group-message").value = "";
    await showGroup(openGroup);
  } catch (e) { text($("group-msg"), e.message); }
};
$("group-refresh").onclick = () => openGroup && showGroup(openGroup).catch(() => {});
$("group-close").onclick = () => { openGroup = null; $("group-open").classList.add("hidden"); };

async function loadRules() {
  const rules = await api("GET", "/api/v1/stream/rules");
  $("rule-list").replaceChildren(...rules.data.map((r) => {
    const li = document.createElement("li");
    const v = document.createElement("span");
    v.className = "message";
    v.textContent = r.value;
    li.appendChild(v);
    if (r.tag !== null) {
      const t = document.createElement("span");
      t.className = "badge";
      t.textContent = r.tag;
      li.appendChild(t);
    }
    const del = document.createElement("button");
    del.className = "secondary rule-delete";
    del.textContent = "delete";
    del.onclick = async () => {
      await api("POST", "/api/v1/stream/rules", { delete: { ids: [r.id] } });
      await loadRules();
    };
    li.appendChild(del);
    return li;
  }));
}

$("rule-add").onclick = async () => {
  const item = { value: $("rule-value").value };
  if ($("rule-tag").value.trim()) item.tag = $("rule-tag").value.trim();
  try {
    const r = await api("POST", "/api/v1/stream/rules", { add: [item] });
    text($("rule-msg"), r.meta.created ? "added; an open search stream uses it within a second" : "you have this rule already");
    $("rule-value").value = "";
    $("rule-tag").value = "";
    await loadRules();
  } catch (e) {
    text($("rule-msg"), e.message);
  }
};

// The history search: the newest matches, and a bar per bucket of the counts.
$("hs-search").onclick = async () => {
  const query = $("hs-query").value.trim();
  if (!query) return text($("hs-msg"), "write a rule first");
  const q = encodeURIComponent(query);
  try {
    const [page, counts] = await Promise.all([
      api("GET", "/api/v1/history/search?count=20&query=" + q),
      api("GET", "/api/v1/history/counts?bucket=" + $("hs-bucket").value + "&query=" + q),
    ]);
    text($("hs-msg"), counts.total + " matching " + (counts.total === 1 ? "status" : "statuses") +
      " in the history" + (counts.complete ? "" : " (counted in part: the scan ran out of time)"));
    const most = Math.max(1, ...counts.counts.map((c) => c.count));
    $("hs-chart").replaceChildren(...counts.counts.slice(-60).map((c) => {
      const bar = document.createElement("span");
      bar.className = "bar";
      bar.style.height = Math.max(2, Math.round(60 * c.count / most)) + "px";
      bar.title = new Date(c.start * 1000).toLocaleString() + ": " + c.count;
      return bar;
    }));
    $("hs-results").replaceChildren(...page.statuses.map((s) => statusItem(s)));
  } catch (e) {
    text($("hs-msg"), e.message);
    $("hs-chart").replaceChildren();
    $("hs-results").replaceChildren();
  }
};

function setLive(state, info) {
  const el = $("live-status");
  el.className = state;
  text(el, state);
  if (info !== undefined) text($("live-info"), info);
}

function streamUrl() {
  const kind = $("stream-kind").value;
  const q = new URLSearchParams({ access_token: token });
  if (kind === "filter") {
    for (const [k, id] of [["track", "f-track"], ["follow", "f-follow"], ["locations", "f-locations"]]) {
      if ($(id).value.trim()) q.set(k, $(id).value.trim());
    }
  }
  if (kind === "sample") q.set("rate", "0.01");
  if (kind === "list" && openList) q.set("id", openList.id);
  if (lastEventId) q.set("last_event_id", lastEventId);
  return "/api/v1/stream/" + kind + "?" + q.toString();
}

function onEvent(ev) {
  const data = JSON.parse(ev.data);
  if (ev.lastEventId) lastEventId = ev.lastEventId;
  received += 1;
  const ul = $("events");
  let li;
  if (data.type === "status") {
    li = statusItem(data.status, "status");
    if (data.matching_rules) {
      for (const r of data.matching_rules) {
        const b = document.createElement("span");
        b.className = "badge matched";
        b.textContent = "rule " + (r.tag === null ? r.id : r.tag);
        li.appendChild(b);
      }
    }
    // The trending panel follows the live stream (at most every 5 s).
    if (data.status.hashtags && data.status.hashtags.length && Date.now() - trendsAt > 5000) {
      trendsAt = Date.now();
      loadTrends().catch(() => {});
    }
  } else if (data.type === "update") li = statusItem(data.status, "edited");
  else if (data.type === "notification" || data.type === "notification_removed") {
    loadNotifications().catch(() => {});
    return;
  }
  else if (data.type === "repost" || data.type === "mention") li = statusItem(data.status, data.type);
  else {
    li = document.createElement("li");
    const b = document.createElement("span");
    b.className = "badge";
    b.textContent = data.type;
    li.appendChild(b);
    const t = document.createElement("span");
    t.className = "message";
    if (data.type === "delete") t.textContent = "status " + data.status_id + " deleted";
    else if (data.type === "follow" || data.type === "unfollow") t.textContent = "user " + data.source + " " + data.type + "s user " + data.target;
    else if (data.type === "like") t.textContent = "user " + data.source + " likes status " + data.status_id;
    else if (data.type === "direct_message") t.textContent = "@" + data.message.login + " (message): " + data.message.text;
    else if (data.type === "follow_request") { t.textContent = "user " + data.source + " asks to follow user " + data.target; loadRequests().catch(() => {}); }
    else if (data.type === "warning" || data.type === "disconnect") t.textContent = data.code + (data.reason ? ": " + data.reason : "");
    else t.textContent = JSON.stringify(data);
    li.appendChild(t);
  }
  ul.prepend(li);
  while (ul.children.length > 200) ul.lastChild.remove();
  text($("live-info"), received + " events; last id " + (lastEventId || "-"));
  if (data.type === "disconnect" && (data.code === "revoked" || data.code === "stall")) disconnect();
}

function connect() {
  disconnect();
  setLive("connecting", "");
  source = new EventSource(streamUrl());
  source.onopen = () => setLive("live", "connected" + (lastEventId ? "; resumed after " + lastEventId : ""));
  source.onerror = () => {
    if (source && source.readyState === EventSource.CLOSED) setLive("closed", "the server refused the stream");
    else setLive("reconnecting", "reconnecting; will resume after " + (lastEventId || "the start"));
  };
  for (const type of ["status", "update", "notification", "notification_removed", "delete", "follow", "unfollow", "user", "like", "repost", "mention", "follow_request", "direct_message", "warning", "disconnect"]) {
    source.addEventListener(type, onEvent);
  }
}

function disconnect() {
  if (source) { source.close(); source = null; }
  setLive("closed");
}
$("connect").onclick = () => { lastEventId = null; received = 0; $("events").replaceChildren(); connect(); };
$("disconnect").onclick = disconnect;

loadMe();
