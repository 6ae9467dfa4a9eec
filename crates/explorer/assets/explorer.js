// The ScaleChain explorer's one script (an ES module; the pages work without it, less live):
// local times, the overview's live charts and block list, and pan/zoom of the chain picture.

const NS = 'http://www.w3.org/2000/svg';

/** Shows every <time datetime> in the viewer's zone, UTC on hover. */
function localTimes(root = document) {
  for (const t of root.querySelectorAll('time[datetime]')) {
    const d = new Date(t.getAttribute('datetime'));
    if (Number.isNaN(d.getTime())) continue;
    t.title = t.getAttribute('datetime');
    t.textContent = d.toLocaleString();
  }
}

function bytes(n) {
  if (n >= 10 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  if (n >= 10 << 10) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} B`;
}

/** A line chart of [x, y] points drawn into an SVG of viewBox 320×120. */
function draw(svg, points, digits = 0) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const el = (name, attrs, text) => {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e);
    return e;
  };
  el('line', { x1: 34, y1: 105, x2: 315, y2: 105 });
  if (points.length === 0) {
    el('text', { x: 120, y: 60 }, 'waiting for data');
    return;
  }
  const xs = points.map((p) => p[0]);
  const ys = points.map((p) => p[1]);
  const x0 = Math.min(...xs);
  const x1 = Math.max(...xs);
  const top = Math.max(...ys) * 1.1 || 1;
  const px = (x) => (x1 === x0 ? 315 : 34 + ((x - x0) / (x1 - x0)) * 281);
  const py = (y) => 105 - (y / top) * 95;
  el('text', { x: 2, y: 14 }, (top / 1.1).toFixed(digits));
  el('text', { x: 2, y: 108 }, '0');
  el('text', { x: 250, y: 118 }, `last ${Math.max(1, Math.round((x1 - x0) / 1000))} s`);
  el('polyline', { points: points.map((p) => `${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`).join(' ') });
  const last = points[points.length - 1];
  el('text', { x: Math.min(px(last[0]), 290), y: Math.max(py(last[1]) - 4, 10) }, last[1].toFixed(digits));
}

/** The overview: charts seeded with the recent blocks, then fed by /explorer/live. */
function overview(live) {
  const keepMs = 10 * 60 * 1000;
  const tps = [];
  const interval = [];
  const pool = [];
  const seed = JSON.parse(live.dataset.seed || '[]').slice().reverse();
  // Points are [time, value, height]: a block sent again (the stream's first tick, a
  // reconnection, a reorganisation) replaces the points from its height on.
  const addBlock = (b) => {
    for (const series of [tps, interval]) {
      while (series.length > 0 && series[series.length - 1][2] >= b.height) series.pop();
    }
    if (b.interval_ms > 0) {
      tps.push([b.time, (b.txs / b.interval_ms) * 1000, b.height]);
      interval.push([b.time, b.interval_ms / 1000, b.height]);
    }
  };
  seed.forEach(addBlock);
  const trim = (series, now) => {
    while (series.length > 0 && series[0][0] < now - keepMs) series.shift();
    while (series.length > 600) series.shift();
  };
  const redraw = () => {
    draw(document.getElementById('chart-tps'), tps, 0);
    draw(document.getElementById('chart-interval'), interval, 1);
    draw(document.getElementById('chart-mempool'), pool, 0);
  };
  redraw();
  const state = document.getElementById('live-state');
  const tbody = document.querySelector('#blocks tbody');
  const es = new EventSource(live.dataset.live);
  es.addEventListener('open', () => { state.textContent = 'Live: updates arrive as the node changes.'; });
  es.addEventListener('error', () => { state.textContent = 'Live updates interrupted; reconnecting…'; });
  es.addEventListener('status', (ev) => {
    const s = JSON.parse(ev.data);
    document.getElementById('mempool-txs').textContent = s.mempool_txs;
    document.getElementById('mempool-bytes').textContent = bytes(s.mempool_bytes);
    document.getElementById('peer-count').textContent = s.peers;
    document.getElementById('sync').textContent = s.orphans === 0 ? 'in step' : `${s.orphans} orphans`;
    const up = Math.floor(s.uptime_s);
    document.getElementById('uptime').textContent =
      `${Math.floor(up / 3600)}h ${String(Math.floor(up / 60) % 60).padStart(2, '0')}m ${String(up % 60).padStart(2, '0')}s`;
    const now = Date.now();
    pool.push([now, s.mempool_txs]);
    trim(pool, now);
    redraw();
  });
  es.addEventListener('block', (ev) => {
    const b = JSON.parse(ev.data);
    // A block at or below what is shown replaces it (a reorganisation).
    for (const tr of [...tbody.querySelectorAll('tr[data-height]')]) {
      if (Number(tr.dataset.height) >= b.height) tr.remove();
    }
    const tr = document.createElement('tr');
    tr.dataset.height = b.height;
    tr.className = 'new';
    const cell = (child, cls) => {
      const td = document.createElement('td');
      if (cls) td.className = cls;
      td.append(child);
      tr.append(td);
    };
    const link = (href, text, code) => {
      const a = document.createElement('a');
      a.href = href;
      if (code) {
        const c = document.createElement('code');
        c.textContent = text;
        a.append(c);
      } else {
        a.textContent = text;
      }
      return a;
    };
    cell(link(`/explorer/block/${b.height}`, String(b.height)));
    cell(link(`/explorer/block/${b.hash}`, `${b.hash.slice(0, 16)}…`, true));
    const t = document.createElement('time');
    t.setAttribute('datetime', new Date(b.time).toISOString());
    cell(t);
    cell(String(b.txs), 'num');
    cell(b.interval_ms === 0 ? '—' : `${(b.interval_ms / 1000).toFixed(1)} s`, 'num');
    tbody.prepend(tr);
    localTimes(tr);
    while (tbody.rows.length > 30) tbody.deleteRow(tbody.rows.length - 1);
    const h = document.getElementById('tip-height');
    h.textContent = b.height;
    h.href = `/explorer/block/${b.height}`;
    document.getElementById('tip-hash').textContent = b.hash;
    addBlock(b);
    trim(tps, Date.now());
    trim(interval, Date.now());
    redraw();
  });
}

/** Pan (drag, arrow keys) and zoom (wheel, + and -) of the chain picture through its viewBox. */
function panZoom(pan) {
  const svg = pan.querySelector('svg');
  const vb = svg.viewBox.baseVal;
  const full = { w: vb.width, h: vb.height };
  svg.setAttribute('width', '100%');
  svg.removeAttribute('height');
  // The whole height (every branch row), the newest 1,400 units of width.
  const view = { x: 0, y: 0, w: Math.min(full.w, 1400), h: full.h };
  // Start at the newest blocks (the right end).
  view.x = Math.max(0, full.w - view.w);
  const apply = () => {
    svg.setAttribute('viewBox', `${view.x} ${view.y} ${view.w} ${view.h}`);
    svg.style.aspectRatio = `${view.w} / ${view.h}`;
  };
  const zoom = (f, cx = view.x + view.w / 2, cy = view.y + view.h / 2) => {
    const w = Math.min(Math.max(view.w * f, 200), full.w * 2);
    const h = (w / view.w) * view.h;
    view.x = cx - ((cx - view.x) * w) / view.w;
    view.y = cy - ((cy - view.y) * h) / view.h;
    view.w = w;
    view.h = h;
    apply();
  };
  apply();
  let drag = null;
  pan.addEventListener('pointerdown', (e) => {
    if (e.target.closest('a')) return;
    drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y };
    pan.classList.add('dragging');
    pan.setPointerCapture(e.pointerId);
  });
  pan.addEventListener('pointermove', (e) => {
    if (!drag) return;
    const scale = view.w / pan.clientWidth;
    view.x = drag.vx - (e.clientX - drag.x) * scale;
    view.y = drag.vy - (e.clientY - drag.y) * scale;
    apply();
  });
  const end = () => { drag = null; pan.classList.remove('dragging'); };
  pan.addEventListener('pointerup', end);
  pan.addEventListener('pointercancel', end);
  pan.addEventListener('wheel', (e) => {
    e.preventDefault();
    const r = svg.getBoundingClientRect();
    const cx = view.x + ((e.clientX - r.left) / r.width) * view.w;
    const cy = view.y + ((e.clientY - r.top) / r.height) * view.h;
    zoom(e.deltaY > 0 ? 1.15 : 1 / 1.15, cx, cy);
  }, { passive: false });
  pan.addEventListener('keydown', (e) => {
    const step = view.w / 8;
    const moves = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
    if (moves[e.key]) {
      view.x += moves[e.key][0];
      view.y += moves[e.key][1];
      apply();
    } else if (e.key === '+' || e.key === '=') {
      zoom(1 / 1.25);
    } else if (e.key === '-') {
      zoom(1.25);
    } else {
      return;
    }
    e.preventDefault();
  });
}

/** A study directory from the viewer's disk: the node renders report.md; figures and data
 * come from the chosen files (object URLs), matched by name. */
function studyUpload(input) {
  const state = document.getElementById('study-upload-state');
  const report = document.getElementById('report');
  input.addEventListener('change', async () => {
    const files = [...input.files];
    const md = files.find((f) => f.name === 'report.md') || files.find((f) => f.name.endsWith('.md'));
    if (!md) {
      state.textContent = 'Choose the directory\'s report.md (with its figures).';
      return;
    }
    state.textContent = `Rendering ${md.name}…`;
    const res = await fetch('/explorer/study/render', { method: 'POST', body: await md.text(), headers: { 'content-type': 'text/markdown' } });
    if (!res.ok) {
      state.textContent = `The node refused the report (${res.status}).`;
      return;
    }
    report.innerHTML = await res.text();
    const byName = new Map(files.map((f) => [f.name, f]));
    let shown = 0;
    let missing = 0;
    for (const [sel, attr] of [['img[src]', 'src'], ['a[href]', 'href']]) {
      for (const el of report.querySelectorAll(sel)) {
        const url = el.getAttribute(attr);
        if (url.startsWith('#') || url.startsWith('http')) continue;
        const f = byName.get(url.split('/').pop());
        if (f) {
          el.setAttribute(attr, URL.createObjectURL(f));
          if (attr === 'src') shown += 1;
        } else if (attr === 'src') {
          missing += 1;
        }
      }
    }
    state.textContent = `${md.name}: ${shown} figures shown${missing ? `, ${missing} not among the chosen files` : ''}.`;
  });
}

/** An EA's result file, checked by the node against the chain's ballots. */
function verifyResult(input) {
  const out = document.getElementById('verify-result');
  input.addEventListener('change', async () => {
    const f = input.files[0];
    if (!f) return;
    out.textContent = `Verifying ${f.name}…`;
    const res = await fetch(input.dataset.verify, { method: 'POST', body: await f.text(), headers: { 'content-type': 'application/json' } });
    // The node answers an HTML fragment (escaped by its templates) in every case.
    out.innerHTML = await res.text();
  });
}

localTimes();
const result = document.getElementById('result-file');
if (result) verifyResult(result);
const upload = document.getElementById('study-files');
if (upload) studyUpload(upload);
const live = document.getElementById('live');
if (live) overview(live);
const pan = document.querySelector('.pan');
if (pan) panZoom(pan);
for (const a of document.querySelectorAll('.amt')) a.setAttribute('tabindex', '0');
