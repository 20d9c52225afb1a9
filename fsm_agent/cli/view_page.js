// fsm-agent's replay viewer: the data is the JSON in #data (fsm_agent/tape/view.py).
// Everything is drawn on demand: the timeline draws only the rows in sight, a step's
// state is rebuilt from the fields each step changed, and the search index is made
// on the first search.
'use strict';
const D = JSON.parse(document.getElementById('data').textContent);
const N = D.steps.length;
const E = D.machine.edges;
const MARKS = [[1, 'E', 'error'], [2, 'I', 'interrupt'], [4, 'C', 'compaction'],
  [8, 'H', 'hook block'], [16, 'P', 'permission refused']];
const ROW = 18;
let cur = 0;
let query = '';
let matches = [];
let haystack = null;

function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(typeof kid === 'string' || typeof kid === 'number' ? text(String(kid)) : kid);
  }
  return el;
}
function text(s) {
  if (!query) return document.createTextNode(s);
  const frag = document.createDocumentFragment();
  const low = s.toLowerCase();
  let at = 0;
  for (let i = low.indexOf(query); i >= 0; i = low.indexOf(query, at)) {
    frag.append(s.slice(at, i), h('mark', {}, document.createTextNode(s.slice(i, i + query.length))));
    at = i + query.length;
  }
  frag.append(s.slice(at));
  return frag;
}
const svgNS = 'http://www.w3.org/2000/svg';
function s(tag, props, ...kids) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(props || {})) el.setAttribute(k, v);
  for (const kid of kids) el.append(kid);
  return el;
}
const json = (v) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));
const edgeOf = (k) => E[D.steps[k - 1]];
const kindOf = (e) => e[3];
const marksOf = (k) => MARKS.filter(([bit]) => D.marks[k - 1] & bit)
  .map(([bit, ch, what]) => h('span', {class: 'mk m' + bit, title: what}, ch));

// -- the steps and their turns ------------------------------------------------
const turnStart = [];  // [turn, first step]
const rows = [0];      // >= 0: a step; < 0: a turn's heading (-turn)
for (let k = 1; k <= N; k++) {
  const t = D.turns[k - 1];
  if (!turnStart.length || turnStart[turnStart.length - 1][0] !== t) {
    turnStart.push([t, k]);
    rows.push(-t);
  }
  rows.push(k);
}
const rowOf = new Int32Array(N + 1);
rows.forEach((r, i) => { if (r >= 0) rowOf[r] = i; });
const changeSteps = Object.keys(D.changes).map(Number).sort((a, b) => a - b);

function stateAt(k) {
  const st = Object.assign({}, D.initial);
  for (const c of changeSteps) { if (c > k) break; Object.assign(st, D.changes[c]); }
  return st;
}
function expand(runs) {
  const out = [];
  for (const [first, count] of runs) for (let i = 0; i < count; i++) out.push(first + i);
  return out;
}

// -- the timeline ---------------------------------------------------------------
const tl = document.getElementById('timeline');
const tlInner = h('div', {style: `height:${rows.length * ROW}px;position:relative`});
tl.append(tlInner);
function drawTimeline() {
  const first = Math.max(0, Math.floor(tl.scrollTop / ROW) - 10);
  const last = Math.min(rows.length, first + Math.ceil(tl.clientHeight / ROW) + 20);
  tlInner.textContent = '';
  for (let i = first; i < last; i++) {
    const r = rows[i];
    const top = `top:${i * ROW}px`;
    if (r < 0) { tlInner.append(h('div', {class: 'row turn', style: top}, `turn ${-r}`)); continue; }
    const row = h('div', {class: 'row' + (r === cur ? ' sel' : ''), style: top, 'data-step': r,
      onclick: () => go(r)});
    if (r === 0) row.append('   0 start');
    else {
      const e = edgeOf(r);
      row.append(String(r).padStart(5) + ' ', h('b', {class: 'k-' + kindOf(e)}, e[1]),
        h('span', {class: 'muted'}, ` → ${e[2]}`), ...marksOf(r));
    }
    tlInner.append(row);
  }
}
tl.addEventListener('scroll', drawTimeline);
function reveal(k) {
  const y = rowOf[k] * ROW;
  if (y < tl.scrollTop || y + ROW > tl.scrollTop + tl.clientHeight) {
    tl.scrollTop = y - tl.clientHeight / 2;
  }
}

// -- the machine ------------------------------------------------------------------
const counts = new Int32Array(E.length);
for (const e of D.steps) counts[e]++;
const finals = new Set(D.machine.final);
const column = D.machine.states.filter((st) => !finals.has(st));
const pos = {};
const GAP = 40, BW = 150, X = 230, FX = 520;
column.forEach((st, i) => { pos[st] = [X, 24 + i * GAP]; });
const fgap = ((column.length - 1) * GAP) / Math.max(1, finals.size - 1);
[...finals].forEach((st, i) => { pos[st] = [FX, 24 + i * fgap]; });
const edgeEls = [];
const stateEls = {};
function drawMachine() {
  const height = 24 + (column.length - 1) * GAP + 30;
  const svg = s('svg', {width: 600, height, viewBox: `0 0 600 ${height}`, id: 'diagram'});
  svg.append(s('defs', {}, s('marker', {id: 'arr', viewBox: '0 0 8 8', refX: 7, refY: 4,
    markerWidth: 8, markerHeight: 8, markerUnits: 'userSpaceOnUse', orient: 'auto'}, s('path', {d: 'M0,0L8,4L0,8z',
    fill: '#64748b'}))));
  const seen = {};
  E.forEach((e, i) => {
    const [src, name, dst, kind] = e;
    if (!pos[src] || !pos[dst]) return;
    const pair = src + '>' + dst;
    const j = seen[pair] = (seen[pair] ?? -1) + 1;
    const [x, y1] = pos[src], [, y2] = pos[dst];
    const si = column.indexOf(src), di = column.indexOf(dst);
    let d, lx, ly;
    if (src === dst) {
      d = `M${x + BW / 2},${y1 - 5}C${x + BW / 2 + 40},${y1 - 22} ${x + BW / 2 + 40},${y1 + 22} `
        + `${x + BW / 2},${y1 + 5}`;
      [lx, ly] = [x + BW / 2 + 34, y1 - 10];
    } else if (finals.has(dst)) {
      d = `M${x + BW / 2},${y1 + 4 - j * 4}L${FX - 60},${y2}`;
      [lx, ly] = [(x + BW / 2 + FX - 60) / 2, (y1 + y2) / 2 - 2];
    } else if (di === si + 1) {
      d = `M${x + (j - 0.5) * 10},${y1 + 11}L${x + (j - 0.5) * 10},${y2 - 11}`;
      [lx, ly] = [x + 10 + j * 10, (y1 + y2) / 2 + 4];
    } else {
      const right = di > si;
      const side = right ? BW / 2 : -BW / 2;
      const bulge = (right ? 1 : -1) * (28 + 14 * Math.abs(di - si) + j * 12);
      d = `M${x + side},${y1}C${x + side + bulge},${y1} ${x + side + bulge},${y2} ${x + side},${y2}`;
      [lx, ly] = [x + side + bulge * 0.75 + (right ? 2 : -22), (y1 + y2) / 2];
    }
    const n = counts[i];
    const width = n ? 1.5 + Math.log2(n + 1) * 0.8 : 1;
    const path = s('path', {d, class: `ed k-${kind}` + (n ? ' taken' : ''),
      'stroke-width': width, 'marker-end': 'url(#arr)', 'data-edge': name},
    s('title', {}, `${src} -[${name}]-> ${dst}: ${n} time(s)`));
    edgeEls[i] = path;
    svg.append(path);
    if (n) svg.append(s('text', {x: lx, y: ly, class: 'cnt'}, `×${n}`));
  });
  const visited = new Set();
  E.forEach((e, i) => { if (counts[i]) { visited.add(e[0]); visited.add(e[2]); } });
  for (const [st, [x, y]] of Object.entries(pos)) {
    const w = finals.has(st) ? 120 : BW;
    const g = s('g', {class: 'st' + (finals.has(st) ? ' final' : '')
      + (visited.has(st) ? ' visited' : ''), 'data-state': st},
    s('rect', {x: x - w / 2, y: y - 11, width: w, height: 22}),
    s('text', {x, y: y + 4, 'text-anchor': 'middle'}, st));
    stateEls[st] = g;
    svg.append(g);
  }
  const box = document.getElementById('machine');
  box.append(svg);
  const legend = h('div', {class: 'muted'}, 'edges: ',
    ...['phase', 'continue', 'terminal', 'retry'].map((k) => h('b', {class: 'k-' + k},
      (k === 'retry' ? 'retry (fallback)' : k) + ' ')),
    '· width: how often taken · orange: this step\'s edge');
  box.append(legend);
  const table = h('table', {id: 'edges'}, h('tr', {}, h('th', {}, 'from'), h('th', {}, 'edge'),
    h('th', {}, 'to'), h('th', {}, 'kind'), h('th', {}, 'taken'), h('th', {}, 'when')));
  E.forEach((e, i) => table.append(h('tr', {'data-edge': i}, h('td', {}, e[0]),
    h('td', {class: 'k-' + e[3]}, e[1]), h('td', {}, e[2]), h('td', {}, e[3]),
    h('td', {}, counts[i] || ''), h('td', {class: 'muted'}, e[4]))));
  box.append(h('details', {}, h('summary', {}, 'the edge table'), table));
}
function markMachine(k) {
  for (const el of document.querySelectorAll('.ed.cur, .st.cur, #edges tr.cur')) {
    el.classList.remove('cur');
  }
  const state = k === 0 ? D.machine.initial : edgeOf(k)[2];
  if (stateEls[state]) stateEls[state].classList.add('cur');
  if (k > 0) {
    const i = D.steps[k - 1];
    if (edgeEls[i]) edgeEls[i].classList.add('cur');
    const tr = document.querySelector(`#edges tr[data-edge="${i}"]`);
    if (tr) tr.classList.add('cur');
  }
}

// -- tokens and cost --------------------------------------------------------------------
let cursor = null;
function drawChart() {
  const box = document.getElementById('chart');
  const W = 380, H = 150, L = 4, T = 8;
  const pts = D.usage;
  const top = Math.max(1, ...pts.map((p) => p[1])) * 1.25;
  const lim = D.limits;
  const x = (step) => L + (W - 2 * L) * (N ? step / N : 0);
  const y = (v) => T + (H - 2 * T) * (1 - Math.min(v, top) / top);
  const svg = s('svg', {width: W, height: H, id: 'tokens'});
  svg.append(s('rect', {x: 0, y: 0, width: W, height: H, fill: '#fff', stroke: '#e2e8f0'}));
  const lines = [['window', lim.window, '#111827'], ['autocompact', lim.autocompact, '#dc2626'],
    ['microcompact', lim.microcompact, '#0891b2'], ['collapse', lim.collapse, '#7c3aed']];
  const off = [];
  for (const [name, v, colour] of lines) {
    if (v > top) { off.push(`${name} ${v.toLocaleString()}`); continue; }
    svg.append(s('line', {x1: 0, x2: W, y1: y(v), y2: y(v), stroke: colour,
      'stroke-dasharray': '4 3'}), s('text', {x: 4, y: y(v) - 2, fill: colour}, name));
  }
  const step = Math.max(1, Math.ceil(pts.length / 800));
  let ctx = '', spent = '', total = 0;
  const cost = D.cost || 0;
  for (let i = 0; i < pts.length; i++) {
    total += pts[i][3];
    if (i % step && i !== pts.length - 1) continue;
    ctx += `${x(pts[i][0])},${y(pts[i][1])} `;
    if (cost) spent += `${x(pts[i][0])},${T + (H - 2 * T) * (1 - total / cost)} `;
  }
  svg.append(s('polyline', {points: ctx, fill: 'none', stroke: '#2563eb', 'stroke-width': 1.5}));
  if (spent) {
    svg.append(s('polyline', {points: spent, fill: 'none', stroke: '#16a34a',
      'stroke-dasharray': '2 2'}));
  }
  cursor = s('line', {y1: 0, y2: H, stroke: '#f97316', 'stroke-width': 2});
  svg.append(cursor);
  svg.addEventListener('click', (ev) => {
    const r = svg.getBoundingClientRect();
    go(Math.round(((ev.clientX - r.left - L) / (W - 2 * L)) * N));
  });
  cursor.setAttribute('data-x', x(0));
  box.append(svg, h('div', {class: 'muted'},
    h('span', {style: 'color:#2563eb'}, '— context tokens per call'), ' ',
    h('span', {style: 'color:#16a34a'}, `- - cost so far (of $${cost.toFixed(4)})`),
    off.length ? h('div', {}, 'above the chart: ' + off.join(', ')) : null));
  chartX = x;
}
let chartX = () => 0;

// -- the selected step ------------------------------------------------------------------------
function blocks(content) {
  if (typeof content === 'string') return [h('pre', {}, content)];
  return (content || []).map((b) => {
    const t = b.type;
    let body;
    if (t === 'text') body = h('pre', {}, b.text);
    else if (t === 'thinking') body = h('pre', {class: 'muted'}, b.thinking || '');
    else if (t === 'tool_use') body = h('pre', {}, `${b.name} ${json(b.input)}`);
    else if (t === 'tool_result') {
      body = h('div', {class: b.is_error ? 'err' : ''}, ...blocks(b.content));
    } else body = h('pre', {class: 'muted'}, json(b));
    return h('div', {class: 'blk'}, h('span', {class: 'bt'}, t + (t === 'tool_use' ? ` ${b.id}` : '')
      + (t === 'tool_result' ? ` ${b.tool_use_id}${b.is_error ? ' (error)' : ''}` : '')), body);
  });
}
function message(i) {
  const m = D.messages[i];
  return h('div', {class: 'msg ' + m.role}, h('span', {class: 'role'}, `#${i} ${m.role}`
    + (m.is_meta ? ' (meta)' : '')), ...blocks(m.content));
}
function messageList(numbers, shown) {
  const box = h('div', {});
  const from = Math.max(0, numbers.length - shown);
  if (from) {
    box.append(h('button', {onclick: () => box.replaceWith(messageList(numbers, numbers.length))},
      `show ${from} earlier`));
  }
  for (let i = from; i < numbers.length; i++) box.append(message(numbers[i]));
  return box;
}
function effect(e, k) {
  const head = h('div', {}, h('span', {class: 'name'}, e.n), ' ');
  const box = h('div', {class: 'fx'}, head);
  const a = e.a || {}, r = e.res;
  if (e.n === 'model') {
    head.append(`${a.model} (${a.purpose}), max_tokens ${a.max_tokens}, ${a.messages} messages`);
    if (e.retries) box.append(h('div', {class: 'err'}, `retried after ${e.retries.join(', ')}`));
    if (e.error) box.append(h('div', {class: 'err'}, `error ${e.error.kind}: ${e.error.message}`));
    box.append(...blocks(e.blocks));
    box.append(h('div', {class: 'muted'}, `stop_reason ${e.stop}`
      + (e.usage ? ` · usage ${JSON.stringify(e.usage)}` : '')));
    const req = (D.requests[k] || {})[e.r];
    if (req) {
      box.append(h('details', {}, h('summary', {}, 'system prompt'),
        h('pre', {}, D.systems[req.system].join('\n\n'))));
    }
  } else if (e.n === 'tool') {
    head.append(`${a.name} ${a.id || ''}`);
    box.append(h('div', {}, 'input'), h('pre', {}, json(a.input)));
    if (r && typeof r === 'object') {
      box.append(h('div', {class: r.is_error ? 'err' : ''}, 'result' + (r.is_error ? ' (is_error)' : '')
        + ` · ${r.duration_s ?? 0} s`), ...blocks(r.content));
      const rest = Object.fromEntries(Object.entries(r).filter(([key]) => !['content',
        'is_error', 'duration_s'].includes(key)));
      if (Object.keys(rest).length) box.append(h('pre', {class: 'muted'}, json(rest)));
    } else box.append(h('pre', {}, json(r)));
  } else if (e.n === 'hooks') {
    head.append(json(e.a));
    box.append(h('div', {}, 'answered'), h('pre', {}, json(r)));
  } else if (e.n === 'permission' || e.n === 'ask_permission') {
    head.append(`${a.tool || ''} in ${a.mode || ''} mode`);
    box.append(h('pre', {}, json(a.input ?? a)), h('div', {class: r && r.behavior === 'deny'
      ? 'err' : ''}, 'answer'), h('pre', {}, json(r)));
  } else {
    if (e.r) head.append(e.r);
    if (e.a !== undefined && e.a !== null) box.append(h('pre', {}, json(e.a)));
    box.append(h('pre', {}, '→ ' + json(r)));
  }
  return box;
}
function divergence() {
  const dv = D.diverged;
  const card = h('div', {class: 'card div', id: 'divergence'});
  if (dv.ended) {
    card.append(h('h3', {}, `the log ends at step ${dv.step}`), dv.ended);
    return card;
  }
  card.append(h('h3', {}, `diverged at step ${dv.step}: ${dv.what}`),
    h('div', {class: 'cols'}, h('div', {id: 'div-log'}, h('b', {}, 'the log'),
      h('pre', {}, json(dv.log))), h('div', {id: 'div-code'}, h('b', {}, 'the code'),
      h('pre', {}, json(dv.code)))));
  if (dv.diff && dv.diff.length) card.append(h('pre', {}, dv.diff.join('\n')));
  return card;
}
function short(v) {
  const t = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v);
  return t === undefined ? 'null' : t.length > 300 ? t.slice(0, 299) + '…' : t;
}
function drawStep(k) {
  const head = document.getElementById('head');
  const main = document.getElementById('step');
  head.textContent = '';
  main.textContent = '';
  const title = h('h3', {id: 'title'});
  if (k === 0) title.append(`step 0/${N}: start, in ${D.machine.initial}`);
  else {
    const e = edgeOf(k);
    title.append(`step ${k}/${N}: ${e[0]} -[`, h('span', {class: 'k-' + e[3]}, e[1]),
      `]-> ${e[2]}  · turn ${D.turns[k - 1]}`, ...marksOf(k));
  }
  if (k === N && D.result) title.append(h('span', {class: 'muted'}, `  (end: ${D.result.reason})`));
  head.append(title);
  if (D.diverged && D.diverged.step && k >= D.diverged.step - 1) head.append(divergence());
  const replayed = !D.diverged || !D.diverged.step || k < D.diverged.step;
  const st = stateAt(k);
  const changed = k > 0 ? D.changes[k] || {} : {};
  const fields = h('table', {id: 'fields'});
  for (const f of D.fields) {
    const v = f === 'messages' ? `${expand(st[f]).length} messages` : short(st[f]);
    fields.append(h('tr', {class: f in changed ? 'changed' : ''}, h('td', {}, f), h('td', {}, v)));
  }
  const diff = h('div', {id: 'diff'});
  if (k > 0) {
    const before = stateAt(k - 1);
    const names = Object.keys(changed);
    if (!names.length) diff.append(h('span', {class: 'muted'}, 'no field changed at this step'));
    for (const f of names) {
      if (f === 'messages') {
        const a = expand(before[f]), b = expand(changed[f]);
        diff.append(h('div', {}, `messages: ${a.length} → ${b.length}`));
      } else diff.append(h('div', {}, `${f}: ${short(before[f])} → ${short(changed[f])}`));
    }
  }
  main.append(h('div', {class: 'card'}, h('h3', {}, 'LoopState after this step'
    + (replayed ? '' : ' (not replayed: the code diverged)')), fields,
  h('h3', {}, 'changed since the step before'), diff));
  const sent = Object.values(D.requests[k] || {});
  const history = messageList(expand(st.messages), 12);
  const left = h('div', {id: 'sent'}, h('h3', {}, 'sent to the model (after preprocessing)'));
  if (!sent.length) left.append(h('div', {class: 'muted'}, 'no model request at this step'));
  for (const req of sent) {
    left.append(h('div', {class: 'muted'}, `${req.purpose}: ${expand(req.m).length} messages`),
      messageList(expand(req.m), 12));
  }
  const fx = h('div', {class: 'card', id: 'effects'}, h('h3', {}, 'effects'));
  const list = D.effects[k] || (k === 0 && N === 0 ? D.effects[1] : null) || [];
  if (!list.length) fx.append(h('div', {class: 'muted'}, 'no effect at this step'));
  for (const e of list) fx.append(effect(e, k));
  main.append(fx);
  main.append(h('div', {class: 'card cols'}, left,
    h('div', {id: 'history'}, h('h3', {}, 'stored history'), history)));
}

// -- moving -------------------------------------------------------------------------------------
function go(k) {
  k = Math.max(0, Math.min(N, k | 0));
  cur = k;
  drawStep(k);
  markMachine(k);
  reveal(k);
  drawTimeline();
  if (cursor) { const cx = chartX(k); cursor.setAttribute('x1', cx); cursor.setAttribute('x2', cx); }
  const want = '#step=' + k;
  if (location.hash !== want) history.replaceState(null, '', want);
  document.getElementById('where').textContent = `step ${k} of ${N}`;
}
function turnOf(k) { return k === 0 ? 0 : D.turns[k - 1]; }
function goTurn(delta) {
  const t = turnOf(cur);
  let i = turnStart.findIndex(([turn]) => turn === t);
  if (delta < 0 && i >= 0 && turnStart[i][1] < cur) { go(turnStart[i][1]); return; }
  i += delta;
  if (i < 0) go(0);
  else if (i < turnStart.length) go(turnStart[i][1]);
}
function search(q) {
  query = q.toLowerCase();
  matches = [];
  if (query) {
    if (!haystack) {
      haystack = new Array(N + 1);
      haystack[0] = JSON.stringify(expand(D.initial.messages).map((i) => D.messages[i]));
      for (let k = 1; k <= N; k++) {
        const fx = D.effects[k];
        haystack[k] = fx ? JSON.stringify(fx) : '';
      }
      haystack = haystack.map((t) => t.toLowerCase());
    }
    for (let k = 0; k <= N; k++) if (haystack[k].includes(query)) matches.push(k);
  }
  const next = matches.find((k) => k > cur) ?? matches[0];
  document.getElementById('found').textContent = query
    ? `${matches.length ? matches.indexOf(next) + 1 : 0} of ${matches.length} steps` : '';
  if (next !== undefined) go(next); else drawStep(cur);
}
const box = document.getElementById('search');
box.addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter') { search(box.value); ev.preventDefault(); }
  if (ev.key === 'Escape') box.blur();
});
const gotoBox = document.getElementById('goto');
gotoBox.addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter') { go(parseInt(gotoBox.value, 10) || 0); gotoBox.blur(); }
  if (ev.key === 'Escape') gotoBox.blur();
});
gotoBox.addEventListener('blur', () => { gotoBox.style.display = 'none'; });
document.addEventListener('keydown', (ev) => {
  if (ev.target instanceof HTMLInputElement || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const keys = {ArrowRight: () => go(cur + 1), ArrowLeft: () => go(cur - 1),
    ArrowDown: () => goTurn(1), ArrowUp: () => goTurn(-1), Home: () => go(0), End: () => go(N),
    '/': () => box.focus(),
    g: () => { gotoBox.style.display = 'inline'; gotoBox.value = ''; gotoBox.focus(); }};
  const act = keys[ev.key];
  if (act) { ev.preventDefault(); act(); }
});
function fromHash() {
  const m = /step=(\d+)/.exec(location.hash);
  return m ? parseInt(m[1], 10) : null;
}
window.addEventListener('hashchange', () => { const k = fromHash(); if (k !== null && k !== cur) go(k); });

document.getElementById('name').textContent = D.log;
document.getElementById('summary').textContent = `${D.session} · ${D.model} · ${N} steps, `
  + `${turnStart.length} turns · ` + (D.result ? `ended ${D.result.reason}` : 'no result (cut short)')
  + (D.cost ? ` · $${D.cost.toFixed(4)}` : '') + (D.damage ? ` · damaged: ${D.damage}` : '')
  + (D.diverged && !D.diverged.step ? ` · ${D.diverged.what}` : '');
drawMachine();
drawChart();
const start = fromHash();
go(start !== null ? start : D.diverged && D.diverged.step ? Math.min(N, D.diverged.step) : 0);
document.body.dataset.ready = '1';
