"use strict";
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}
function schemaText(s) {
  if (!s) return "";
  if (s.$ref) return s.$ref.split("/").pop();
  if (s.type === "array") return "[" + schemaText(s.items) + "]";
  return s.type || "object";
}
fetch("/openapi.json").then((r) => r.json()).then((doc) => {
  const byTag = {};
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      (byTag[op.tags[0]] = byTag[op.tags[0]] || []).push([method, path, op]);
    }
  }
  const ops = document.getElementById("ops");
  ops.replaceChildren();
  for (const [tag, list] of Object.entries(byTag)) {
    ops.append(el("h2", {}, tag));
    for (const [method, path, op] of list) {
      const box = el("div", { class: "op" },
        el("span", { class: "method " + method }, method), " ", el("code", {}, path), " — ", op.summary);
      const params = op.parameters || [];
      if (params.length) {
        const t = el("table", {}, el("tr", {}, el("th", {}, "parameter"), el("th", {}, "in"), el("th", {}, "meaning")));
        for (const p of params) t.append(el("tr", {}, el("td", {}, el("code", {}, p.name)), el("td", {}, p.in), el("td", {}, p.description || "")));
        box.append(t);
      }
      if (op.requestBody) {
        const s = Object.values(op.requestBody.content)[0].schema;
        box.append(el("div", {}, "body: ", el("code", {}, schemaText(s))));
      }
      const codes = Object.entries(op.responses).map(([code, r]) => {
        const c = r.content ? Object.entries(r.content).map(([t, v]) => t + " " + schemaText(v.schema)).join(", ") : "";
        return code + (c ? " (" + c + ")" : "") + ": " + r.description;
      });
      box.append(el("div", { class: "muted" }, codes.join(" · ")));
      if (op.security && op.security.length) box.append(el("div", { class: "muted" }, op.security.some((s) => Object.keys(s).length === 0) ? "token optional" : "token required"));
      ops.append(box);
    }
  }
  const sc = document.getElementById("schemas");
  for (const [name, s] of Object.entries(doc.components.schemas)) {
    sc.append(el("h3", {}, name));
    if (s.description) sc.append(el("p", { class: "muted" }, s.description));
    sc.append(el("pre", {}, JSON.stringify(s.properties || s, null, 2)));
  }
}).catch((e) => { document.getElementById("ops").textContent = "Could not load /openapi.json: " + e; });
