// A small code editor over a <textarea>: line numbers, Rust highlighting, bracket matching and completion.
//
// Why not CodeMirror: the page would need a bundler and a node toolchain at build time and ~150 KB of
// script for four features; the textarea stays the one source of truth (forms, tests and screen readers
// see a plain textarea), and this file is small enough to read in one sitting. The highlighted text is a
// <pre> under the textarea, whose own text is transparent: both use the same font, padding and line
// height, and the <pre> follows the textarea's scrolling.

const KEYWORDS = new Set(['as', 'crate', 'enum', 'false', 'fn', 'impl', 'let', 'mod', 'mut', 'pub', 'self', 'struct', 'true', 'use', 'None', 'Some']);
const TYPES = new Set(['bool', 'f32', 'f64', 'i16', 'i32', 'i64', 'u8', 'Option', 'String', 'Vec']);
const OPEN = { '(': ')', '[': ']', '{': '}' };
const CLOSE = { ')': '(', ']': '[', '}': '{' };

// Tokens as [class, text] pairs; the texts concatenated give the input back.
const TOKEN = new RegExp(
  [
    '(?<comment>//[^\\n]*|/\\*[\\s\\S]*?(?:\\*/|$))',
    '(?<string>b?r#*"[\\s\\S]*?(?:"#*|$)|b?"(?:[^"\\\\]|\\\\[\\s\\S])*(?:"|$))',
    '(?<attr>#!?(?=\\[))',
    '(?<number>\\b\\d[\\d_]*(?:\\.\\d[\\d_]*)?(?:[eE][+-]?\\d+)?(?:i16|i32|i64|f32|f64|u8)?\\b)',
    '(?<word>[A-Za-z_][A-Za-z0-9_]*)',
    '(?<bracket>[()\\[\\]{}])',
    '(?<other>\\s+|[^A-Za-z0-9_\\s"/#()\\[\\]{}]+|[\\s\\S])',
  ].join('|'),
  'g',
);

export function tokenize(text) {
  const out = [];
  TOKEN.lastIndex = 0;
  let m;
  while ((m = TOKEN.exec(text)) !== null) {
    const kind = Object.keys(m.groups).find((k) => m.groups[k] !== undefined);
    let cls = kind;
    if (kind === 'word') {
      const after = text.slice(TOKEN.lastIndex);
      const before = text[m.index - 1];
      if (KEYWORDS.has(m[0])) cls = 'keyword';
      else if (TYPES.has(m[0])) cls = 'type';
      else if (after.startsWith('::')) cls = 'module';
      else if (before === '.') cls = 'method';
      else if (after.startsWith('(')) cls = 'fn';
      else if (before === ':' && text[m.index - 2] === ':') cls = 'member';
      else cls = 'ident';
    }
    out.push([cls, m[0], m.index]);
    if (m[0].length === 0) TOKEN.lastIndex += 1;
  }
  return out;
}

// Pairs every bracket with its partner: a map from offset to partner offset (-1 for an unmatched one).
export function pairBrackets(tokens) {
  const pairs = new Map();
  const stack = [];
  for (const [cls, text, at] of tokens) {
    if (cls !== 'bracket') continue;
    if (OPEN[text]) stack.push([text, at]);
    else {
      const top = stack[stack.length - 1];
      if (top && top[0] === CLOSE[text]) {
        stack.pop();
        pairs.set(top[1], at);
        pairs.set(at, top[1]);
      } else pairs.set(at, -1);
    }
  }
  for (const [, at] of stack) pairs.set(at, -1);
  return pairs;
}

const escape = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

// Wraps `textarea` in an editor. `options.completions(before)` returns what completes the text before the
// caret: `{ from, items: [{ label, detail }] }`, or null.
export function editor(textarea, options = {}) {
  const wrap = document.createElement('div');
  wrap.className = 'editor';
  const gutter = document.createElement('pre');
  gutter.className = 'gutter';
  gutter.setAttribute('aria-hidden', 'true');
  const code = document.createElement('div');
  code.className = 'code';
  const pre = document.createElement('pre');
  pre.className = 'highlight';
  pre.setAttribute('aria-hidden', 'true');
  const layer = document.createElement('code');
  pre.append(layer);
  const list = document.createElement('ul');
  list.className = 'completions';
  list.setAttribute('role', 'listbox');
  list.hidden = true;
  textarea.replaceWith(wrap);
  code.append(pre, textarea);
  wrap.append(gutter, code, list);

  let pairs = new Map();
  let lines = 0;
  let items = [];
  let chosen = 0;
  let from = 0;

  function paint() {
    const text = textarea.value;
    const tokens = tokenize(text);
    pairs = pairBrackets(tokens);
    const caret = textarea.selectionStart === textarea.selectionEnd ? textarea.selectionStart : -1;
    // The bracket just before the caret, or the one after it, and its partner.
    let lit = new Set();
    for (const at of [caret - 1, caret]) {
      if (pairs.has(at)) {
        lit = new Set([at, pairs.get(at)]);
        break;
      }
    }
    let html = '';
    for (const [cls, t, at] of tokens) {
      if (cls === 'bracket') {
        const extra = pairs.get(at) === -1 ? ' unmatched' : lit.has(at) ? ' matched' : '';
        html += `<span class="t-bracket${extra}">${escape(t)}</span>`;
      } else if (cls === 'other' || cls === 'ident') html += escape(t);
      else html += `<span class="t-${cls}">${escape(t)}</span>`;
    }
    // A trailing newline needs a line of its own to keep the heights equal.
    layer.innerHTML = `${html}\n`;
    const n = text.split('\n').length;
    if (n !== lines) {
      lines = n;
      gutter.textContent = Array.from({ length: n }, (_, i) => i + 1).join('\n');
    }
    follow();
  }

  function follow() {
    layer.style.transform = `translate(${-textarea.scrollLeft}px, ${-textarea.scrollTop}px)`;
    gutter.scrollTop = textarea.scrollTop;
  }

  // Where the caret is on screen, relative to the editor, for the completion list.
  function caretPoint() {
    const before = textarea.value.slice(0, textarea.selectionStart);
    const line = before.split('\n').length - 1;
    const column = before.length - before.lastIndexOf('\n') - 1;
    const style = getComputedStyle(textarea);
    const lineHeight = parseFloat(style.lineHeight) || 18;
    const probe = document.createElement('span');
    probe.textContent = 'x'.repeat(10);
    probe.style.font = style.font;
    probe.style.visibility = 'hidden';
    probe.style.position = 'absolute';
    document.body.append(probe);
    const charWidth = probe.getBoundingClientRect().width / 10;
    probe.remove();
    return {
      top: textarea.offsetTop + parseFloat(style.paddingTop) + (line + 1) * lineHeight - textarea.scrollTop + 2,
      left: code.offsetLeft + parseFloat(style.paddingLeft) + column * charWidth - textarea.scrollLeft,
    };
  }

  function close() {
    list.hidden = true;
    items = [];
  }

  function open(force = false) {
    if (!options.completions) return;
    const caret = textarea.selectionStart;
    if (caret !== textarea.selectionEnd) return close();
    const found = options.completions(textarea.value.slice(0, caret), force);
    if (!found || found.items.length === 0) return close();
    items = found.items.slice(0, 12);
    from = found.from;
    chosen = 0;
    render();
    const p = caretPoint();
    list.style.top = `${p.top}px`;
    list.style.left = `${Math.max(0, Math.min(p.left, wrap.clientWidth - 260))}px`;
    list.hidden = false;
  }

  function render() {
    list.replaceChildren(
      ...items.map((it, i) => {
        const li = document.createElement('li');
        li.setAttribute('role', 'option');
        li.setAttribute('aria-selected', String(i === chosen));
        const label = document.createElement('b');
        label.textContent = it.label;
        const detail = document.createElement('span');
        detail.textContent = it.detail || '';
        li.append(label, detail);
        li.onmousedown = (e) => {
          e.preventDefault();
          chosen = i;
          accept();
        };
        return li;
      }),
    );
  }

  function accept() {
    const it = items[chosen];
    if (!it) return close();
    const caret = textarea.selectionStart;
    textarea.setRangeText(it.label, from, caret, 'end');
    close();
    textarea.dispatchEvent(new Event('input', { bubbles: true }));
  }

  textarea.addEventListener('input', (e) => {
    paint();
    // Completion follows typing (not a paste or an accepted item, which dispatch without inputType).
    if (e.inputType && e.inputType.startsWith('insert') && e.inputType !== 'insertFromPaste') open();
    else if (e.inputType && e.inputType.startsWith('delete') && !list.hidden) open();
  });
  textarea.addEventListener('scroll', follow);
  for (const ev of ['click', 'keyup', 'select', 'focus']) textarea.addEventListener(ev, () => paint());
  // Closed when the focus has gone elsewhere (not by a blur the focus came back from).
  textarea.addEventListener('blur', () =>
    setTimeout(() => {
      if (document.activeElement !== textarea) close();
    }, 100),
  );
  textarea.addEventListener('keydown', (e) => {
    if (e.key === ' ' && e.ctrlKey) {
      e.preventDefault();
      open(true);
      return;
    }
    if (list.hidden) return;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      chosen = (chosen + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length;
      render();
    } else if (e.key === 'Enter' || e.key === 'Tab') {
      e.preventDefault();
      e.stopImmediatePropagation();
      accept();
    } else if (e.key === 'Escape') {
      e.preventDefault();
      close();
    }
  });

  paint();
  // Setting `.value` from a script fires no event: `refresh` repaints.
  return { refresh: paint, wrap };
}
