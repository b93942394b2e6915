// gsme view: sortable and filterable tables, and the transcripts loaded on demand.
// Chunks are scripts calling gsmeChunk(kind, n, base64 of zlib JSON) (see gsme.view_data).
// Every text from the run is set with textContent, never parsed as HTML.
(() => {
  "use strict";
  const DATA = JSON.parse(document.getElementById("gsme-data").textContent);
  const BOOKS = DATA.books;
  const PAGE = 100;
  const DEBOUNCE_MS = 120;

  // ------------------------------------------------------------------ chunks
  const pending = new Map();
  const loaded = new Map();
  window.gsmeChunk = (kind, n, packed) => {
    const key = `${kind}-${n}`;
    const done = pending.get(key);
    if (done) inflate(packed).then(done.resolve, done.reject);
  };
  async function inflate(packed) {
    const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return JSON.parse(await new Response(stream).text());
  }
  function load(kind, n) {
    const key = `${kind}-${n}`;
    if (!loaded.has(key)) {
      loaded.set(key, new Promise((resolve, reject) => {
        pending.set(key, { resolve, reject });
        const script = document.createElement("script");
        script.src = `${DATA.dir}/${key}.js`;
        script.onerror = () => reject(new Error(`${DATA.dir}/${key}.js is missing`));
        document.head.appendChild(script);
      }));
    }
    return loaded.get(key);
  }

  // ------------------------------------------------------------------ the transcript index
  const index = { chunks: [], all: null, hay: null, texts: null };
  async function indexChunk(n) {
    if (!index.chunks[n]) index.chunks[n] = await load("index", n);
    return index.chunks[n];
  }
  async function fullIndex() {
    if (index.all) return index.all;
    status(`loading the index of ${DATA.rows.toLocaleString()} transcripts…`);
    const parts = await Promise.all(
      Array.from({ length: DATA.indexChunks }, (_, n) => indexChunk(n)));
    const all = {};
    for (const column of Object.keys(parts[0] || {})) all[column] = parts.flatMap((p) => p[column]);
    index.all = all;
    return all;
  }
  async function row(id) {
    const chunk = await indexChunk(Math.floor(id / DATA.indexRows));
    const at = id % DATA.indexRows;
    const value = {};
    for (const [column, values] of Object.entries(chunk)) value[column] = values[at];
    return value;
  }
  function label(column, code) {
    return BOOKS[column] ? BOOKS[column][code] : String(code);
  }
  async function text(id) {
    const texts = await load("text", Math.floor(id / DATA.textRows));
    return texts[id % DATA.textRows];
  }

  // ------------------------------------------------------------------ the transcript table
  const table = document.getElementById("transcript-table");
  const body = table.querySelector("tbody");
  const box = document.getElementById("search");
  const full = document.getElementById("search-texts");
  const count = document.getElementById("search-count");
  const selects = Array.from(document.querySelectorAll("select[data-filter]"));
  const COLUMNS = ["candidate", "task", "split", "repeat", "attempt", "outcome", "pathology"];
  const view = { ids: null, start: 0, sort: null, descending: false, only: null };

  function status(message) { count.textContent = message; }

  async function refresh() {
    const query = box.value.trim().toLowerCase();
    const filters = selects.filter((s) => s.value !== "").map((s) => [s.dataset.filter, +s.value]);
    if (view.only !== null) {
      view.ids = [view.only];
    } else if (!query && !filters.length && view.sort === null) {
      view.ids = null;  // every row in page order: only the chunks shown are loaded
    } else {
      const all = await fullIndex();
      let ids = Array.from({ length: DATA.rows }, (_, i) => i);
      for (const [column, code] of filters) ids = ids.filter((i) => all[column][i] === code);
      if (query) {
        const hay = full.checked ? await textHay() : indexHay(all);
        ids = ids.filter((i) => hay[i].includes(query));
      }
      if (view.sort !== null) {
        const values = all[view.sort];
        const sign = view.descending ? -1 : 1;
        ids.sort((a, b) => sign * ((values[a] > values[b]) - (values[a] < values[b])) || a - b);
      }
      view.ids = ids;
    }
    view.start = Math.min(view.start, Math.max(0, total() - 1));
    view.start -= view.start % PAGE;
    await draw();
  }
  function total() { return view.ids === null ? DATA.rows : view.ids.length; }
  function indexHay(all) {
    if (!index.hay) {
      index.hay = all.first.map((first, i) => [
        label("candidate", all.candidate[i]), label("task", all.task[i]),
        label("split", all.split[i]), label("outcome", all.outcome[i]),
        label("pathology", all.pathology[i]), first].join(" ").toLowerCase());
    }
    return index.hay;
  }
  async function textHay() {
    if (!index.texts) {
      const hay = indexHay(await fullIndex());
      const n = Math.ceil(DATA.rows / DATA.textRows);
      const texts = [];
      for (let c = 0; c < n; c++) {
        status(`loading transcript texts: ${c + 1} of ${n} chunks…`);
        texts.push(...(await load("text", c)));
      }
      index.texts = texts.map((t, i) => `${hay[i]} ${t.toLowerCase()}`);
    }
    return index.texts;
  }
  async function draw() {
    const n = total();
    const ids = [];
    for (let i = view.start; i < Math.min(n, view.start + PAGE); i++) {
      ids.push(view.ids === null ? i : view.ids[i]);
    }
    const rows = await Promise.all(ids.map(row));
    body.replaceChildren(...rows.map((r, i) => tr(ids[i], r)));
    const shown = n ? `${(view.start + 1).toLocaleString()}–${(view.start + ids.length).toLocaleString()}` : "0";
    status(`${shown} of ${n.toLocaleString()} transcripts` +
           (n < DATA.rows ? ` (${DATA.rows.toLocaleString()} in all)` : ""));
    document.getElementById("page-prev").disabled = view.start === 0;
    document.getElementById("page-next").disabled = view.start + PAGE >= n;
    document.getElementById("show-all").hidden = view.only === null;
  }
  function tr(id, r) {
    const row = document.createElement("tr");
    row.dataset.row = id;
    for (const column of COLUMNS) {
      const cell = document.createElement("td");
      cell.textContent = label(column, r[column]);
      row.appendChild(cell);
    }
    const cell = document.createElement("td");
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = r.first || "(empty)";
    const pre = document.createElement("pre");
    pre.className = "gsme-transcript";
    details.append(summary, pre);
    details.addEventListener("toggle", async () => {
      if (details.open && !pre.textContent) {
        pre.textContent = "loading…";
        pre.textContent = await text(id);
      }
    });
    cell.appendChild(details);
    row.appendChild(cell);
    return row;
  }
  // a keystroke waits DEBOUNCE_MS for the next; the table's data-search-ms says how long
  // the last search took from its last keystroke to the rows drawn
  let timer = null;
  let asked = null;
  box.addEventListener("input", () => {
    const typed = performance.now();
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const query = box.value.trim().toLowerCase();
      if (query === asked && view.only === null) return;
      asked = query; view.only = null; view.start = 0;
      await refresh();
      table.dataset.searchMs = Math.round(performance.now() - typed);
    }, DEBOUNCE_MS);
  });
  full.addEventListener("change", () => {
    index.texts = full.checked ? index.texts : null;
    if (box.value.trim()) refresh();
  });
  selects.forEach((s) => s.addEventListener("change", () => {
    view.only = null; view.start = 0; refresh();
  }));
  document.getElementById("page-prev").addEventListener("click", () => {
    view.start = Math.max(0, view.start - PAGE); draw();
  });
  document.getElementById("page-next").addEventListener("click", () => {
    view.start += PAGE; draw();
  });
  document.getElementById("show-all").addEventListener("click", () => {
    view.only = null; refresh();
  });
  table.querySelectorAll("th[data-column]").forEach((th) => th.addEventListener("click", () => {
    const column = th.dataset.column;
    view.descending = view.sort === column ? !view.descending : false;
    view.sort = column;
    table.querySelectorAll("th").forEach((h) => h.removeAttribute("aria-sort"));
    th.setAttribute("aria-sort", view.descending ? "descending" : "ascending");
    refresh();
  }));

  // one transcript, from a link in a candidate's changed trials
  async function showTranscript(id) {
    view.only = id; view.start = 0;
    await refresh();
    const details = body.querySelector("details");
    if (details) details.open = true;
    document.getElementById("transcripts").scrollIntoView();
  }

  // ------------------------------------------------------------------ changed trials
  const WORDS = { fixed: ["failed", "passed"], broken: ["passed", "failed"] };
  document.querySelectorAll("details[data-changed]").forEach((details) => {
    details.addEventListener("toggle", async () => {
      const holder = details.querySelector(".changed-rows");
      if (!details.open || holder.dataset.done) return;
      holder.dataset.done = "1";
      const changed = await load("changed", details.dataset.changed);
      const rows = changed.task.map((task, i) => {
        const tr = document.createElement("tr");
        const words = WORDS[changed.change[i]] || ["", ""];
        const cells = [task, changed.repeat[i], changed.change[i]];
        cells.forEach((v) => { const td = document.createElement("td"); td.textContent = v; tr.appendChild(td); });
        [[changed.parent[i], words[0]], [changed.child[i], words[1]]].forEach(([id, word]) => {
          const td = document.createElement("td");
          if (id >= 0) {
            const a = document.createElement("a");
            a.href = "#transcripts";
            a.textContent = `${word} (transcript)`;
            a.addEventListener("click", (e) => { e.preventDefault(); showTranscript(id); });
            td.appendChild(a);
          } else {
            td.textContent = word || "n/a";
          }
          tr.appendChild(td);
        });
        return tr;
      });
      holder.querySelector("tbody").replaceChildren(...rows);
      holder.querySelector(".loading").remove();
    });
  });

  // ------------------------------------------------------------------ small tables
  const NUMBER = /^[+\u2212-]?\d[\d,]*(\.\d+)?%?$/;
  function key(text) {
    const t = text.trim();
    if (t === "n/a" || t === "") return [2, 0];
    if (NUMBER.test(t)) return [0, parseFloat(t.replace(/[,%]/g, "").replace("\u2212", "-"))];
    if (t.startsWith("< ")) return [0, parseFloat(t.slice(2)) - 1e-9];
    return [1, t.toLowerCase()];
  }
  document.querySelectorAll("table.sortable").forEach((t) => {
    const heads = Array.from(t.tHead.rows[0].cells);
    heads.forEach((th, c) => th.addEventListener("click", () => {
      const descending = th.getAttribute("aria-sort") === "ascending";
      heads.forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      const rows = Array.from(t.tBodies[0].rows);
      const keys = new Map(rows.map((r) => [r, key(r.cells[c].textContent)]));
      rows.sort((a, b) => {
        const [ka, kb] = [keys.get(a), keys.get(b)];
        const order = ka[0] - kb[0] || (ka[1] > kb[1]) - (ka[1] < kb[1]);
        return (descending && ka[0] === kb[0] && ka[0] < 2 ? -order : order);
      });
      t.tBodies[0].append(...rows);
    }));
  });
  document.querySelectorAll("input[data-filters]").forEach((input) => {
    const rows = Array.from(document.getElementById(input.dataset.filters).tBodies[0].rows);
    const texts = rows.map((r) => r.textContent.toLowerCase());
    input.addEventListener("input", () => {
      const query = input.value.trim().toLowerCase();
      rows.forEach((r, i) => { r.hidden = query !== "" && !texts[i].includes(query); });
    });
  });

  refresh();
})();
