// The playground page: two editors, three SQL panes, a results grid. All the work is in the WebAssembly
// module (crates/tandem-playground); this file only moves text between it and the page, and keeps the
// state in the address so a link reproduces it.

import { editor } from './editor.js';

const $ = (id) => document.getElementById(id);
const query = $('query');
const schema = $('schema');
// For tests and the curious: `usableMs` counts from the start of navigation, `loadMs` from this script.
const state = (window.tandemPlayground = { ready: false, runs: 0, lastRunMs: null, loadMs: null, usableMs: null, lastReport: null, errors: [] });
// Script errors, kept for the browser test (which expects none).
window.addEventListener('error', (e) => state.errors.push(String(e.message)));
window.addEventListener('unhandledrejection', (e) => state.errors.push(String(e.reason)));

const CHAPTERS = {
  1: 'Chapter 1 — tables and typed columns',
  2: 'Chapter 2 — expressions and NULL',
  3: 'Chapter 3 — dialects and parameters',
};

let engine = null;
let editors = [];
// Table and column names of the Tables box, and the DSL reference, for completion (see `names` in web.rs).
let names = { tables: [], reference: [] };
let generation = 0;
let defaultSchema = '';
let examples = [];
let pending = null;

async function loadEngine() {
  generation += 1;
  // A fresh module instance after an internal error: the old one may be in a broken state.
  const suffix = generation > 1 ? `?instance=${generation}` : '';
  const mod = await import(`./pkg/tandem_playground.js${suffix}`);
  await mod.default({ module_or_path: new URL('./pkg/tandem_playground_bg.wasm', import.meta.url) });
  engine = mod;
}

function setStatus(text, bad = false) {
  const s = $('status');
  s.textContent = text;
  s.classList.toggle('bad', bad);
}

// `#q=…&s=…` is a shared state; `#example=<id>` opens one of the book's examples (the chapters link so).
// `unknown` names an example the page does not have.
function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  const name = p.get('example');
  const example = examples.find((e) => e.id === name);
  return {
    q: p.get('q') ?? (example ? example.query : null),
    s: p.get('s'),
    unknown: name !== null && !example ? name : null,
  };
}

// The address follows the boxes: typing replaces the current entry; choosing an example adds one, so the
// browser's back button returns to what was there before.
let lastHash = null;
// Longer boxes are not put in the address (the playground refuses them anyway).
const MAX_LINK = 64 * 1024;
function writeHash(push = false) {
  if (query.value.length + schema.value.length > MAX_LINK) return;
  const p = new URLSearchParams();
  p.set('q', query.value);
  if (schema.value !== defaultSchema) p.set('s', schema.value);
  const hash = `#${p.toString()}`;
  lastHash = hash;
  if (hash === location.hash) return;
  if (push) history.pushState(null, '', hash);
  else history.replaceState(null, '', hash);
}

// Back, forward, or a link to another example on this page: load what the address says.
function followHash() {
  if (location.hash === lastHash) return;
  const { q, s, unknown } = readHash();
  schema.value = s ?? defaultSchema;
  query.value = q ?? defaultQuery();
  runNow();
  if (unknown !== null) unknownExample(unknown);
}

function unknownExample(name) {
  setStatus(`there is no example named “${name}”; showing ${query.value === defaultQuery() ? 'the default query' : 'the query in the link'}`, true);
}

// The example whose query is in the box, if it is one of them unchanged.
function exampleShown() {
  const ex = examples.find((e) => e.query === query.value);
  return ex ? ex.id : '';
}

function defaultQuery() {
  return (examples.find((e) => e.id === 'adults') || examples[0]).query;
}

function el(tag, props = {}, children = []) {
  const e = document.createElement(tag);
  Object.assign(e, props);
  for (const c of children) e.append(c);
  return e;
}

// The error as rustc prints one: message, location, the line, carets under the span. A long line is cut to
// a window around the span (an input may be one 32 KB line), so the box never grows past the page.
const WINDOW = 80;
function errorLine(text, start, end) {
  const lineStart = text.lastIndexOf('\n', start - 1) + 1;
  let lineEnd = text.indexOf('\n', start);
  if (lineEnd < 0) lineEnd = text.length;
  const spanEnd = Math.max(start + 1, Math.min(end, lineEnd));
  let from = Math.max(lineStart, start - WINDOW / 2);
  let to = Math.min(lineEnd, Math.max(spanEnd, from + WINDOW));
  if (to - from > WINDOW) to = from + WINDOW;
  const head = from > lineStart ? '…' : '';
  const tail = to < lineEnd ? '…' : '';
  const width = Math.max(1, Math.min(spanEnd, to) - start);
  return {
    line: head + text.slice(from, to) + tail,
    carets: ' '.repeat(head.length + start - from) + '^'.repeat(width) + (spanEnd > to ? '…' : ''),
  };
}

function showError(err) {
  const box = err.input === 'query' ? query : schema;
  box.classList.add('has-error');
  const text = box.value;
  const start = Math.min(err.start, text.length);
  const end = Math.max(start, Math.min(err.end, text.length));
  const { line, carets } = errorLine(text, start, end);
  const gutter = ' '.repeat(String(err.line).length);
  $('error-message').textContent = `error: ${err.message}`;
  $('error-where').textContent =
    `${gutter}--> ${err.input}:${err.line}:${err.column}\n${gutter} |\n` +
    `${err.line} | ${line}\n${gutter} | ${carets}`;
  $('error').hidden = false;
  $('error-jump').onclick = () => {
    box.focus();
    box.setSelectionRange(start, end);
  };
}

function showSql(sql) {
  const panes = $('dialects');
  panes.replaceChildren();
  for (const d of sql) {
    const card = el('div', { className: 'dialect' }, [el('h3', { textContent: d.dialect })]);
    card.dataset.dialect = d.dialect;
    if (d.error) {
      card.append(el('p', { className: 'dialect-error', textContent: `cannot render: ${d.error}` }));
    }
    for (const s of d.statements) {
      card.append(el('pre', { className: 'sql', textContent: s.sql }));
      if (s.params.length) {
        card.append(
          el('ol', { className: 'params' }, s.params.map((p) => el('li', { textContent: `${p.value}  (${p.type})` }))),
        );
      }
    }
    for (const n of d.notes || []) {
      card.append(el('p', { className: 'dialect-note', textContent: n }));
    }
    panes.append(card);
  }
}

// A run's outcome into a summary line and its grids (the result, the data tab and the raw-SQL tab share it).
function showRun(run, summary = $('summary'), grids = $('grids')) {
  grids.replaceChildren();
  summary.classList.toggle('bad', Boolean(run && run.error));
  if (!run) {
    summary.textContent = '';
    return;
  }
  if (run.error) {
    summary.textContent = `SQLite: ${run.error}`;
    return;
  }
  summary.textContent = run.summary;
  for (const g of run.grids) {
    const head = el('tr', {}, g.columns.map((c) => el('th', { textContent: c })));
    const rows = g.rows.map((r) =>
      el(
        'tr',
        {},
        r.map((v) => {
          if (v === null) return el('td', { className: 'null', textContent: 'NULL' });
          return el('td', { className: typeof v === 'number' ? 'num' : '', textContent: String(v) });
        }),
      ),
    );
    const caption = el('caption', { textContent: g.title + (g.truncated ? ' (first rows only)' : '') });
    grids.append(el('table', {}, [caption, el('thead', {}, [head]), el('tbody', {}, rows)]));
  }
}

// The tabs under the SQL: the query's result, the tables' rows, raw SQL.
const TABS = ['result', 'data', 'raw'];
function selectTab(name) {
  for (const t of TABS) {
    $(`tab-${t}`).setAttribute('aria-selected', String(t === name));
    $(`panel-${t}`).hidden = t !== name;
  }
  if (name === 'data') showData();
}

function showData() {
  if (!engine) return;
  showRun(JSON.parse(engine.data(schema.value)), $('data-summary'), $('data-grids'));
}

function runRaw() {
  if (!engine) return;
  const t0 = performance.now();
  let run;
  try {
    run = JSON.parse(engine.run_sql(schema.value, $('raw').value));
  } catch (e) {
    internalError(e);
    return;
  }
  showRun(run, $('raw-summary'), $('raw-grids'));
  state.lastRaw = run;
  setStatus(run.error ? 'error in the raw SQL' : `raw SQL ran in ${(performance.now() - t0).toFixed(1)} ms`, Boolean(run.error));
}

// The query's SQLite statement with its values written in, into the raw-SQL box.
function rawFromQuery() {
  const sqlite = state.lastReport && (state.lastReport.sql || []).find((d) => d.dialect === 'SQLite');
  const stmt = sqlite && sqlite.statements.find((s) => s.inline);
  if (!stmt) {
    setStatus('the query has no SQLite statement to copy', true);
    return;
  }
  $('raw').value = stmt.inline;
  runRaw();
}

// What completes the text before the caret: a table's columns after `users::`, methods after `.`,
// tables and functions at the start of a word (or anything, when asked with Ctrl+Space).
function completions(before, force) {
  const starts = (prefix) => (o) => o.label.startsWith(prefix) && o.label !== prefix;
  let m = before.match(/([A-Za-z_][A-Za-z0-9_]*)::([A-Za-z0-9_]*)$/);
  if (m) {
    const t = names.tables.find((t) => t.module === m[1]);
    if (!t) return null;
    const opts = [{ label: 'table', detail: `the ${t.module} table` }, ...t.columns.map((c) => ({ label: c.field, detail: c.type }))];
    return { from: before.length - m[2].length, items: opts.filter(starts(m[2])) };
  }
  m = before.match(/\.([A-Za-z_][A-Za-z0-9_]*)?$/);
  if (m && !/\d\.\d*$/.test(before)) {
    const prefix = m[1] || '';
    const seen = new Set();
    const opts = [];
    for (const r of names.reference) {
      if (r.on === 'function' || seen.has(r.name)) continue;
      seen.add(r.name);
      opts.push({ label: r.name, detail: r.doc });
    }
    return { from: before.length - prefix.length, items: opts.filter(starts(prefix)) };
  }
  m = before.match(/(?:^|[^A-Za-z0-9_:.])([A-Za-z_][A-Za-z0-9_]*)?$/);
  const prefix = (m && m[1]) || '';
  if (!prefix && !force) return null;
  const opts = [
    ...names.tables.map((t) => ({ label: t.module, detail: 'table' })),
    ...names.reference.filter((r) => r.on === 'function').map((r) => ({ label: r.name, detail: r.doc })),
  ];
  return { from: before.length - prefix.length, items: opts.filter(starts(prefix)) };
}

function refreshNames() {
  if (!engine) return;
  const next = JSON.parse(engine.names(schema.value));
  // While the Tables box has an error, keep completing the tables it had.
  names = { tables: next.tables.length ? next.tables : names.tables, reference: next.reference };
}

// The reference panel, from the same table the evaluator reads (reference.rs), with links into the book
// when the page is inside it.
function fillReference() {
  const inBook = location.pathname.includes('/playground/');
  const groups = new Map();
  for (const r of names.reference) {
    if (!groups.has(r.title)) groups.set(r.title, []);
    groups.get(r.title).push(r);
  }
  const list = $('reference-list');
  list.replaceChildren();
  for (const [title, entries] of groups) {
    list.append(el('h4', { textContent: title }));
    const dl = el('dl');
    for (const r of entries) {
      const dd = el('dd', { textContent: r.doc });
      if (inBook) {
        dd.append(' · ', el('a', { href: `../${r.chapter}`, target: '_top', textContent: 'chapter' }));
      }
      dl.append(el('dt', {}, [el('code', { textContent: r.call })]), dd);
    }
    list.append(dl);
  }
}

function show(report) {
  for (const box of [query, schema]) box.classList.remove('has-error');
  $('error').hidden = true;
  if (report.error) {
    showError(report.error);
    showSql([]);
    showRun(null);
    return;
  }
  showSql(report.sql);
  showRun(report.run);
}

async function internalError(e) {
  setStatus(`internal error (${e}); restarting the engine`, true);
  engine = null;
  try {
    await loadEngine();
    setStatus('engine restarted');
  } catch (again) {
    setStatus(`the engine could not restart: ${again}`, true);
  }
}

function runNow({ push = false } = {}) {
  clearTimeout(pending);
  if (!engine) return;
  const t0 = performance.now();
  let report;
  try {
    report = JSON.parse(engine.run(schema.value, query.value));
  } catch (e) {
    internalError(e);
    return;
  }
  const ms = performance.now() - t0;
  show(report);
  for (const ed of editors) ed.refresh();
  $('examples').value = exampleShown();
  writeHash(push);
  state.runs += 1;
  state.lastRunMs = ms;
  state.lastReport = report;
  setStatus(report.error ? `error in the ${report.error.input}` : `rendered and ran in ${ms.toFixed(1)} ms`, Boolean(report.error));
}

function runSoon() {
  clearTimeout(pending);
  pending = setTimeout(runNow, 250);
}

function fillExamples() {
  const select = $('examples');
  const groups = new Map();
  for (const ex of examples) {
    if (!groups.has(ex.chapter)) {
      const g = el('optgroup', { label: CHAPTERS[ex.chapter] || `Chapter ${ex.chapter}` });
      groups.set(ex.chapter, g);
      select.append(g);
    }
    groups.get(ex.chapter).append(el('option', { value: ex.id, textContent: ex.title }));
  }
  select.onchange = () => {
    const ex = examples.find((e) => e.id === select.value);
    if (ex) {
      query.value = ex.query;
      runNow({ push: true });
    }
  };
}

function reset() {
  schema.value = defaultSchema;
  query.value = defaultQuery();
  runNow({ push: true });
}

async function main() {
  const t0 = performance.now();
  try {
    await loadEngine();
  } catch (e) {
    setStatus(`the WebAssembly engine did not load: ${e}`, true);
    return;
  }
  defaultSchema = engine.default_schema();
  examples = JSON.parse(engine.examples());
  fillExamples();
  editors = [editor(query, { completions }), editor(schema)];
  const { q, s, unknown } = readHash();
  schema.value = s ?? defaultSchema;
  query.value = q ?? defaultQuery();
  window.addEventListener('hashchange', followHash);
  window.addEventListener('popstate', followHash);
  query.addEventListener('input', runSoon);
  schema.addEventListener('input', runSoon);
  for (const box of [query, schema]) {
    box.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        runNow();
      }
    });
  }
  $('run').onclick = runNow;
  for (const t of TABS) $(`tab-${t}`).onclick = () => selectTab(t);
  $('raw-run').onclick = runRaw;
  $('raw-from-query').onclick = rawFromQuery;
  $('raw').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      runRaw();
    }
  });
  schema.addEventListener('input', () => {
    refreshNames();
    if (!$('panel-data').hidden) showData();
  });
  refreshNames();
  fillReference();
  $('reset').onclick = reset;
  $('share').onclick = async () => {
    writeHash();
    try {
      await navigator.clipboard.writeText(location.href);
      setStatus('link copied');
    } catch {
      setStatus('the link is in the address bar');
    }
  };
  state.loadMs = performance.now() - t0;
  runNow();
  state.usableMs = performance.now();
  state.ready = true;
  const wasm = performance.getEntriesByType('resource').find((r) => r.name.includes('.wasm'));
  const size = wasm && wasm.decodedBodySize ? `, ${(wasm.decodedBodySize / 1024).toFixed(0)} KiB of WebAssembly` : '';
  if (unknown !== null) unknownExample(unknown);
  else setStatus(`ready in ${state.loadMs.toFixed(0)} ms${size}; ${$('status').textContent}`);
}

main();
