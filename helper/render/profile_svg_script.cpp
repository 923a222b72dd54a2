#include "render/profile_svg_script.h"

namespace xref::render {

const char* const kFlameGraphStyle = R"css(
text { font-family: monospace; font-size: 12px; fill: #222; }
.title { font-size: 17px; text-anchor: middle; }
.subtitle { text-anchor: middle; fill: #555; }
.n { cursor: pointer; }
.n text { pointer-events: none; }
.n:hover > rect { stroke: #000; stroke-width: 0.6; }
.n.above > rect { opacity: 0.55; }
.n.hide { display: none; }
.n.match > rect { fill: rgb(225, 30, 225); }
.incomplete > rect { stroke: #b00; stroke-width: 0.8; stroke-dasharray: 3 2; }
.button { cursor: pointer; fill: #0645ad; text-decoration: underline; }
.button.hidden { display: none; }
input { font: 12px monospace; width: 280px; }
)css";

const char* const kFlameGraphScript = R"js(
(function () {
  'use strict';
  var svg = document.documentElement;
  var total = Number(svg.getAttribute('data-total'));
  var chartX = Number(svg.getAttribute('data-chart-x'));
  var chartWidth = Number(svg.getAttribute('data-chart-width'));
  var charWidth = Number(svg.getAttribute('data-char-width'));
  var details = document.getElementById('details');
  var matched = document.getElementById('matched');
  var reset = document.getElementById('reset');
  var input = document.getElementById('search');
  var nodes = [];
  var byId = {};

  function percent(samples) {
    return (total > 0 ? samples * 100 / total : 0).toFixed(2) + ' %';
  }

  // The label a frame of width w can show, as the helper cut it.
  function label(name, w) {
    var chars = Math.floor((w - 6) / charWidth);
    if (chars < 3) return '';
    var letters = Array.from(name);
    return letters.length <= chars ? name : letters.slice(0, chars - 2).join('') + '..';
  }

  function place(node, x, w) {
    node.rect.setAttribute('x', x.toFixed(2));
    node.rect.setAttribute('width', w.toFixed(2));
    node.text.setAttribute('x', (x + 3).toFixed(2));
    node.text.textContent = label(node.name, w);
  }

  // Shows the node across the whole width, its subtree below it scaled to
  // match, its callers dimmed at full width, everything else hidden.
  function zoom(target) {
    var start = target.offset, end = target.offset + target.samples;
    nodes.forEach(function (node) {
      var inside = node.offset >= start && node.offset + node.samples <= end;
      var below = node.depth >= target.depth && inside;
      var caller = node.depth < target.depth && node.offset <= start && node.offset + node.samples >= end;
      node.g.classList.toggle('hide', !below && !caller);
      node.g.classList.toggle('above', caller);
      if (below) place(node, chartX + (node.offset - start) * chartWidth / target.samples,
                       node.samples * chartWidth / target.samples);
      else if (caller) place(node, chartX, chartWidth);
    });
    var root = target === nodes[0];
    reset.classList.toggle('hidden', root);
    if (root) svg.removeAttribute('data-zoomed'); else svg.setAttribute('data-zoomed', target.g.id);
  }

  // Highlights every frame whose name matches (a regular expression, or the
  // text itself when it is not one) and shows the share of all samples
  // under a match, each sample counted once however many matches it has.
  function search(text) {
    var pattern = null;
    if (text !== '') {
      try { pattern = new RegExp(text); } catch (e) {
        pattern = { test: function (name) { return name.indexOf(text) >= 0; } };
      }
    }
    var spans = [];
    nodes.forEach(function (node) {
      var hit = pattern !== null && node !== nodes[0] && pattern.test(node.name);
      node.g.classList.toggle('match', hit);
      if (hit) spans.push([node.offset, node.offset + node.samples]);
    });
    spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
    var samples = 0, reach = -1;
    spans.forEach(function (span) {
      if (span[1] <= reach) return;
      samples += span[1] - Math.max(span[0], reach);
      reach = span[1];
    });
    if (pattern === null) {
      matched.textContent = '';
      svg.removeAttribute('data-matched-samples');
    } else {
      matched.textContent = 'matched: ' + percent(samples) + ' (' + samples + ' of ' + total + ' samples, ' +
                            spans.length + ' frames)';
      svg.setAttribute('data-matched-samples', String(samples));
    }
  }

  Array.prototype.forEach.call(document.querySelectorAll('g.n'), function (g) {
    var node = {
      g: g, rect: g.querySelector('rect'), text: g.querySelector('text'), name: g.getAttribute('data-n'),
      offset: Number(g.getAttribute('data-o')), samples: Number(g.getAttribute('data-s')),
      depth: Number(g.getAttribute('data-d'))
    };
    nodes.push(node);
    byId[g.id] = node;
    g.addEventListener('click', function () { zoom(node); });
    g.addEventListener('mouseover', function () {
      details.textContent = node.name + ': ' + node.samples + ' samples, ' + percent(node.samples);
    });
    g.addEventListener('mouseout', function () { details.textContent = ''; });
  });
  reset.addEventListener('click', function () { zoom(nodes[0]); });
  input.addEventListener('input', function () { search(input.value); });

  location.hash.replace(/^#/, '').split('&').forEach(function (part) {
    var eq = part.indexOf('=');
    if (eq < 0) return;
    var key = part.slice(0, eq), value = decodeURIComponent(part.slice(eq + 1));
    if (key === 'zoom' && byId[value]) zoom(byId[value]);
    if (key === 'search') { input.value = value; input.setAttribute('value', value); search(value); }
  });
})();
)js";

}  // namespace xref::render
