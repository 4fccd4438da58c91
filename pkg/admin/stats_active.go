package admin

import "fmt"

// The active stats page (/stats?format=active-html) is Envoy's "active"
// view: a page whose own script fetches /stats?format=json&usedonly with
// the page's filter and type every few seconds and shows the stats that
// changed most often first (then the higher values, then by name), each
// with its value and how many times it changed since the page was opened.
// Values are updated in the same table rows, so a reader's eye stays put.
// The form's filter and type come from the /stats route's parameters;
// the number of stats shown (default 50) and the seconds between updates
// (default 5) are the page's own settings, with Envoy's ids.

// statsActiveTemplate is the whole active page. Its script carries the
// page's nonce (see setHTMLHeaders) and writes only through textContent,
// so a name or value holding markup stays text.
const statsActiveTemplate = pageHead + `<form id='active-form'>
<table class='home-table'>
<tbody>
{{- range .Params}}{{template "param" .}}{{end}}
<tr>
  <td class='option'><input type='text' name='max-display-count' id='active-max-display-count' value='50' size='6'></td>
  <td class='home-data'><label for='active-max-display-count'>Maximum number of stats to display</label></td>
</tr>
<tr>
  <td class='option'><input type='text' name='update-interval' id='active-update-interval' value='5' size='6'></td>
  <td class='home-data'><label for='active-update-interval'>Number of seconds between each update</label></td>
</tr>
</tbody>
</table>
<p><button>Apply</button></p>
</form>
<div class='status' id='active-status'></div>
<p id='active-updated' class='none'></p>
<h2>Counters, gauges and text readouts</h2>
<table class='stats' id='active-stats'>
<thead><tr><th>Name</th><th>Value</th><th>Changes</th></tr></thead>
<tbody></tbody>
</table>
<h2>Histograms (cumulative)</h2>
<table class='stats' id='active-histograms'>
<thead></thead>
<tbody></tbody>
</table>
<script nonce='{{.Nonce}}'>
` + activeStatsScript + `</script>
</body>
</html>
`

// activeStatsScript runs the active page. It is plain JavaScript without
// template actions (html/template escapes nothing inside it).
const activeStatsScript = `'use strict';
(function () {
  const byName = new Map(); // name -> {name, value, changes, row, valueCell, changesCell}
  const form = document.getElementById('active-form');
  const filterInput = document.getElementById('param-1-stats-filter');
  const typeInput = document.getElementById('param-1-stats-type');
  const maxInput = document.getElementById('active-max-display-count');
  const intervalInput = document.getElementById('active-update-interval');
  const statusLine = document.getElementById('active-status');
  const updatedLine = document.getElementById('active-updated');
  const statsBody = document.querySelector('#active-stats tbody');
  const histHead = document.querySelector('#active-histograms thead');
  const histBody = document.querySelector('#active-histograms tbody');
  let timer = null;
  let shown = '';

  function setting(input, fallback) {
    const v = parseInt(input.value, 10);
    return Number.isNaN(v) || v <= 0 ? fallback : v;
  }

  function schedule(seconds) {
    if (timer !== null) {
      window.clearTimeout(timer);
    }
    timer = window.setTimeout(load, seconds * 1000);
  }

  function query() {
    return 'filter=' + encodeURIComponent(filterInput.value) +
        '&type=' + encodeURIComponent(typeInput.value);
  }

  async function load() {
    // One chain of updates: a load asked for by the form replaces the
    // pending one.
    if (timer !== null) {
      window.clearTimeout(timer);
      timer = null;
    }
    const q = query();
    if (q !== shown) { // a new selection starts counting changes afresh
      byName.clear();
      statsBody.replaceChildren();
      shown = q;
      history.replaceState(null, '', '?format=active-html&' + q);
    }
    try {
      const response = await fetch('stats?format=json&usedonly&' + q, {cache: 'no-store'});
      const body = await response.text();
      if (!response.ok) {
        statusLine.textContent = 'HTTP ' + response.status + ': ' + body;
      } else {
        render(JSON.parse(body));
        statusLine.textContent = '';
        updatedLine.textContent = 'updated ' + new Date().toLocaleTimeString();
      }
    } catch (e) {
      statusLine.textContent = 'cannot fetch the stats: ' + e;
    }
    schedule(setting(intervalInput, 5));
  }

  function cell(row, text, className, tag) {
    const td = document.createElement(tag || 'td');
    td.textContent = text;
    if (className) {
      td.className = className;
    }
    row.appendChild(td);
    return td;
  }

  function compare(a, b) {
    if (a.changes !== b.changes) {
      return b.changes - a.changes;
    }
    if (typeof a.value === 'number' && typeof b.value === 'number' && a.value !== b.value) {
      return b.value - a.value;
    }
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  }

  function render(data) {
    const seen = [];
    for (const stat of data.stats || []) {
      if (stat.histograms) {
        renderHistograms(stat.histograms);
        continue;
      }
      let rec = byName.get(stat.name);
      if (!rec) {
        rec = {name: stat.name, value: stat.value, changes: 0, row: document.createElement('tr')};
        cell(rec.row, stat.name);
        rec.valueCell = cell(rec.row, String(stat.value), 'value');
        rec.changesCell = cell(rec.row, '0', 'value');
        byName.set(stat.name, rec);
      } else if (rec.value !== stat.value) {
        rec.value = stat.value;
        rec.changes++;
        rec.valueCell.textContent = String(stat.value);
        rec.changesCell.textContent = String(rec.changes);
        rec.row.classList.add('changed');
      } else {
        rec.row.classList.remove('changed');
      }
      seen.push(rec);
    }
    if (!(data.stats || []).some((s) => s.histograms)) {
      histHead.replaceChildren();
      histBody.replaceChildren();
    }
    seen.sort(compare);
    const rows = seen.slice(0, setting(maxInput, 50)).map((r) => r.row);
    statsBody.replaceChildren(...rows); // moves the existing rows: values change in place
  }

  function renderHistograms(h) {
    const head = document.createElement('tr');
    cell(head, 'Name', '', 'th');
    for (const q of h.supported_quantiles || []) {
      cell(head, 'P' + q, '', 'th');
    }
    histHead.replaceChildren(head);
    const rows = [];
    for (const c of h.computed_quantiles || []) {
      const row = document.createElement('tr');
      cell(row, c.name);
      for (const v of c.values || []) {
        // null until the histogram's first merge (the stats flush)
        cell(row, v.cumulative === null || v.cumulative === undefined ? '-' : String(v.cumulative), 'value');
      }
      rows.push(row);
    }
    histBody.replaceChildren(...rows);
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    load();
  });
  typeInput.addEventListener('change', load);
  // Typing in the filter applies it shortly after the last key.
  filterInput.addEventListener('input', () => schedule(0.5));
  load();
})();
`

// renderActive writes /stats?format=active-html.
func (f *statsFamily) renderActive(w *Response, r *Request) error {
	nonce := newCSPNonce()
	setHTMLHeaders(w, nonce)
	page := statsPage{Title: "active stats", Params: statsForm(r.Params, "active-html", "filter", "type"), Nonce: nonce}
	if err := f.pages.active.Execute(w, page); err != nil {
		return fmt.Errorf("render active stats page: %w", err)
	}
	return nil
}
