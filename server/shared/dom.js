// Small DOM helpers: elements are built with properties and text nodes, never from HTML
// strings, so nothing a payload holds can become markup.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

export const SVG_NS = "http://www.w3.org/2000/svg";

export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null && v !== false) el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") {
      el.addEventListener(k.slice(2), v);
    } else if (k === "class") {
      el.className = v;
    } else if (k === "dataset") {
      Object.assign(el.dataset, v);
    } else if (k in el && typeof v !== "string") {
      el[k] = v;
    } else {
      el.setAttribute(k, v === true ? "" : String(v));
    }
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// clear empties el, then appends children as h does (skipping null, undefined and false:
// the DOM's own append would write them as the text "null").
export function clear(el, ...children) {
  while (el.firstChild) el.removeChild(el.firstChild);
  append(el, children);
  return el;
}

// cardify labels every cell of a table with its column's heading (data-label), so that
// on a narrow screen the CSS can lay each row out as a card (table.cards).
export function cardify(table) {
  const heads = [...table.querySelectorAll("thead th")].map((th) => th.textContent);
  table.classList.add("cards");
  for (const tr of table.querySelectorAll("tbody tr")) {
    [...tr.children].forEach((td, i) => { if (heads[i]) td.dataset.label = heads[i]; });
  }
  return table;
}

export function time(ts) {
  if (!ts) return "";
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return ts;
  return d.toLocaleString(undefined, { hour12: false, month: "short", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

// agoText is how long ago ts was, in words.
export function agoText(ts) {
  if (!ts) return "";
  const s = Math.round((Date.now() - new Date(ts).getTime()) / 1000);
  if (s < 60) return s + " s ago";
  if (s < 3600) return Math.round(s / 60) + " min ago";
  if (s < 86400) return Math.round(s / 3600) + " h ago";
  return Math.round(s / 86400) + " d ago";
}

// ago is an element showing how long ago ts was; tickAgo (every few seconds) keeps it
// true while nothing else re-renders.
export function ago(ts, attrs) {
  return h("span", Object.assign({ dataset: { ago: ts || "" } }, attrs || {}), agoText(ts));
}

export function tickAgo(root) {
  for (const el of root.querySelectorAll("[data-ago]")) {
    const t = agoText(el.dataset.ago);
    if (el.textContent !== t) el.textContent = t;
  }
}

// sortHead builds a table head whose columns sort the rows: cols are [label, key, class]
// (no key: not sortable); a click sorts by the column, a second click reverses; sort is
// { key, dir } and onSort re-renders.
export function sortHead(cols, sort, onSort) {
  return h("thead", {}, h("tr", {}, cols.map(([label, key, cls]) => h("th", { scope: "col", class: cls || "",
    "aria-sort": key && sort.key === key ? (sort.dir > 0 ? "ascending" : "descending") : null },
  key ? h("button", { type: "button", class: "sort", dataset: { sort: key }, onclick: () => {
    if (sort.key === key) sort.dir = -sort.dir;
    else { sort.key = key; sort.dir = 1; }
    onSort();
  } }, label) : label))));
}

// sortRows sorts list in place by sort.key, reading each item's value with get(item, key).
export function sortRows(list, sort, get) {
  return list.sort((a, b) => {
    const x = get(a, sort.key);
    const y = get(b, sort.key);
    return (x < y ? -1 : x > y ? 1 : 0) * sort.dir;
  });
}

// typeName is an event type in words: CARDIAC_ARREST is "Cardiac arrest".
export function typeName(type) {
  const s = String(type || "").replace(/_/g, " ").toLowerCase();
  return s.charAt(0).toUpperCase() + s.slice(1);
}

// RANK orders priorities, most urgent first.
export const RANK = { critical: 0, high: 1, normal: 2, low: 3 };

export function short(id) {
  return id ? String(id).slice(-8) : "";
}

export function badge(text, cls) {
  return h("span", { class: "badge " + (cls || "") }, text);
}

export function field(label, input, id) {
  input.id = id;
  return h("div", {}, h("label", { for: id }, label), input);
}

export function select(options, value, attrs) {
  const el = h("select", attrs || {});
  for (const o of options) {
    const [v, text] = Array.isArray(o) ? o : [o, o === "" ? "any" : o];
    el.append(h("option", { value: v, selected: v === value }, text));
  }
  return el;
}
