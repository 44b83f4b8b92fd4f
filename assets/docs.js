(function () {
  'use strict';
  var SPEC_URL = '/api/openapi.json';
  var METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options', 'trace'];
  var MAX_DEPTH = 10;
  var spec = {};
  var app = document.getElementById('app');

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { if (attrs[k] != null) node.setAttribute(k, attrs[k]); });
    for (var i = 2; i < arguments.length; i++) {
      var kid = arguments[i];
      if (kid == null || kid === false) continue;
      node.append(kid instanceof Node ? kid : String(kid));
    }
    return node;
  }
  function text(tag, cls, value) { return el(tag, { 'class': cls }, value); }
  function slug(s) { return String(s).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, ''); }
  function refName(ref) { return String(ref).split('/').pop(); }

  // Resolves a local JSON pointer such as "#/components/schemas/Job".
  function resolveRef(ref) {
    if (typeof ref !== 'string' || ref.indexOf('#/') !== 0) return null;
    var node = spec;
    var parts = ref.slice(2).split('/');
    for (var i = 0; i < parts.length; i++) {
      var key = decodeURIComponent(parts[i]).replace(/~1/g, '/').replace(/~0/g, '~');
      if (node == null || typeof node !== 'object' || !(key in node)) return null;
      node = node[key];
    }
    return node;
  }
  // Follows $ref chains of parameters, request bodies and responses.
  function deref(obj) {
    for (var i = 0; obj && obj.$ref && i < 20; i++) obj = resolveRef(obj.$ref) || {};
    return obj || {};
  }

  function types(s) {
    if (!s || typeof s !== 'object') return [];
    return Array.isArray(s.type) ? s.type : (s.type ? [s.type] : []);
  }
  function isNullable(s) {
    if (!s || typeof s !== 'object') return false;
    if (s.nullable === true || types(s).indexOf('null') >= 0) return true;
    return (s.oneOf || s.anyOf || []).some(function (v) { return types(v).indexOf('null') >= 0; });
  }
  // One-line type summary, e.g. "string (date-time)", "array<Job>", "Job | null".
  function typeText(s, depth) {
    depth = depth || 0;
    if (s === true || s == null || (typeof s === 'object' && !Object.keys(s).length)) return 'any';
    if (s === false) return 'never';
    if (depth > MAX_DEPTH) return '…';
    if (s.$ref) return refName(s.$ref);
    var combo = s.oneOf || s.anyOf;
    if (combo) return combo.map(function (v) { return typeText(v, depth + 1); }).join(' | ');
    if (s.allOf) return s.allOf.map(function (v) { return typeText(v, depth + 1); }).join(' & ');
    var ts = types(s);
    if (!ts.length) ts = s.properties ? ['object'] : s.items ? ['array'] : s.enum ? ['enum'] : 'const' in s ? ['const'] : ['any'];
    return ts.map(function (t) {
      if (t === 'array') return 'array<' + typeText(s.items, depth + 1) + '>';
      return s.format && t !== 'null' ? t + ' (' + s.format + ')' : t;
    }).join(' | ');
  }

  // Chips for nullable, enum, default and constraints of a schema.
  function meta(s) {
    var box = el('span', { 'class': 'meta' });
    if (!s || typeof s !== 'object') return box;
    var target = s.$ref ? (resolveRef(s.$ref) || {}) : s;
    if (isNullable(s) || isNullable(target)) box.append(text('span', 'chip warn', 'nullable'));
    if (s.deprecated || target.deprecated) box.append(text('span', 'chip warn', 'deprecated'));
    if (s.readOnly || target.readOnly) box.append(text('span', 'chip', 'read-only'));
    if (s.writeOnly || target.writeOnly) box.append(text('span', 'chip', 'write-only'));
    var values = target.enum || ('const' in target ? [target.const] : null);
    if (values) {
      var en = el('span', { 'class': 'enum' }, text('span', 'muted', values.length > 1 ? ' one of: ' : ' value: '));
      values.forEach(function (v) { en.append(el('code', {}, JSON.stringify(v))); });
      box.append(en);
    }
    ['default', 'minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems', 'pattern'].forEach(function (k) {
      if (k in target) box.append(text('span', 'muted', ' ' + k + ': '), el('code', {}, JSON.stringify(target[k])));
    });
    return box;
  }

  // Folds an allOf of plain object schemas into one object schema; null when that is not possible.
  function mergeAllOf(s, seen, depth) {
    if (!Array.isArray(s.allOf) || depth > MAX_DEPTH) return null;
    var out = { type: 'object', properties: {}, required: [] };
    var parts = [s].concat(s.allOf);
    for (var i = 0; i < parts.length; i++) {
      var part = parts[i];
      if (i > 0 && part && part.$ref) {
        if (seen.indexOf(part.$ref) >= 0) return null;
        part = resolveRef(part.$ref);
      }
      if (!part || typeof part !== 'object' || part.oneOf || part.anyOf) return null;
      if (i > 0 && part.allOf) part = mergeAllOf(part, seen, depth + 1);
      if (!part) return null;
      var ts = types(part);
      if (i > 0 && ts.length && ts.indexOf('object') < 0) return null;
      Object.keys(part.properties || {}).forEach(function (k) { out.properties[k] = part.properties[k]; });
      out.required = out.required.concat(part.required || []);
      if (part.additionalProperties !== undefined) out.additionalProperties = part.additionalProperties;
    }
    return out;
  }

  // Nested structure of a schema (properties, items, compositions), or null.
  function details(s, seen, depth) {
    if (!s || typeof s !== 'object') return null;
    if (depth > MAX_DEPTH) return text('div', 'muted', '… (nested too deeply)');
    if (s.$ref) {
      if (seen.indexOf(s.$ref) >= 0) return text('div', 'muted', '↻ ' + refName(s.$ref) + ' (recursive, see above)');
      var target = resolveRef(s.$ref);
      if (!target) return text('div', 'muted', 'unresolved reference ' + s.$ref);
      return details(target, seen.concat([s.$ref]), depth + 1);
    }
    var merged = mergeAllOf(s, seen, depth);
    if (merged) s = merged;
    var box = el('div', { 'class': 'schema' });
    [['allOf', 'all of'], ['oneOf', 'one of'], ['anyOf', 'any of']].forEach(function (pair) {
      var variants = s[pair[0]];
      if (!Array.isArray(variants)) return;
      variants = variants.filter(function (v) { return !(v && v.type === 'null'); });
      if (!variants.length) return;
      if (variants.length === 1) {
        var only = details(variants[0], seen, depth + 1);
        if (only) box.append(only);
        return;
      }
      var list = el('ul', { 'class': 'props' });
      variants.forEach(function (v) {
        list.append(el('li', {}, text('span', 'type', typeText(v)), ' ', meta(v), details(v, seen, depth + 1)));
      });
      box.append(text('div', 'muted', pair[1] + ':'), list);
    });
    if (s.properties) {
      var required = s.required || [];
      var props = el('ul', { 'class': 'props' });
      Object.keys(s.properties).forEach(function (name) {
        var p = s.properties[name];
        var target = p && p.$ref ? (resolveRef(p.$ref) || {}) : (p || {});
        var desc = (p && p.description) || target.description;
        props.append(el('li', {},
          text('span', 'pname', name),
          text('span', 'type', typeText(p)),
          required.indexOf(name) >= 0 ? el('span', { 'class': 'req', title: 'required' }, '* required') : null,
          ' ', meta(p),
          desc ? text('div', 'desc muted', desc) : null,
          details(p, seen, depth + 1)));
      });
      box.append(props);
    }
    if (s.additionalProperties && typeof s.additionalProperties === 'object') {
      box.append(el('div', {}, text('span', 'muted', 'additional properties: '),
        text('span', 'type', typeText(s.additionalProperties)), details(s.additionalProperties, seen, depth + 1)));
    }
    if (s.items && typeof s.items === 'object') {
      var inner = details(s.items, seen, depth + 1);
      if (inner) box.append(el('div', {}, text('span', 'muted', 'items: '), text('span', 'type', typeText(s.items)), inner));
    }
    return box.childNodes.length ? box : null;
  }

  function schemaBlock(s) {
    var target = s && s.$ref ? (resolveRef(s.$ref) || {}) : (s || {});
    return el('div', { 'class': 'schema' },
      text('span', 'type', typeText(s)), ' ', meta(s),
      target.description ? text('div', 'desc muted', target.description) : null,
      details(s, [], 0));
  }

  function contentBlocks(content) {
    var box = el('div');
    Object.keys(content || {}).forEach(function (media) {
      box.append(text('div', 'media', media));
      if (content[media] && content[media].schema) box.append(schemaBlock(content[media].schema));
    });
    return box;
  }

  function paramsTable(params) {
    var table = el('table', {}, el('thead', {}, el('tr', {},
      el('th', {}, 'Name'), el('th', {}, 'In'), el('th', {}, 'Type'), el('th', {}, 'Description'))));
    var tbody = el('tbody');
    params.forEach(function (p) {
      var schema = p.schema || (p.content && (Object.values(p.content)[0] || {}).schema) || {};
      tbody.append(el('tr', {},
        el('td', {}, text('code', '', p.name), p.required ? el('span', { 'class': 'req', title: 'required' }, '*') : null),
        el('td', {}, p.in),
        el('td', {}, text('span', 'type', typeText(schema)), ' ', meta(schema)),
        el('td', {}, p.description ? text('span', 'desc', p.description) : text('span', 'muted', '—'),
          p.deprecated ? text('span', 'chip warn', 'deprecated') : null)));
    });
    table.append(tbody);
    return table;
  }

  function renderOperation(path, method, op, pathItem) {
    // Path-level parameters apply unless the operation overrides them (same name and location).
    var params = {};
    (pathItem.parameters || []).concat(op.parameters || []).forEach(function (raw) {
      var p = deref(raw);
      params[p.in + ':' + p.name] = p;
    });
    params = Object.keys(params).map(function (k) { return params[k]; });
    var cls = METHODS.indexOf(method) >= 0 && method !== 'head' && method !== 'options' && method !== 'trace' ? method : 'other';
    var node = el('div', {
      'class': 'operation' + (op.deprecated ? ' deprecated' : ''),
      'data-method': method, 'data-path': path, id: 'op-' + method + '-' + slug(path)
    });
    var header = el('header', {},
      text('span', 'badge m-' + cls, method),
      text('span', 'path', path),
      op.summary ? text('span', 'summary', op.summary) : null,
      op.deprecated ? text('span', 'chip warn', 'deprecated') : null);
    header.addEventListener('click', function () { node.classList.toggle('collapsed'); });
    var body = el('div', { 'class': 'body' });
    if (op.description) body.append(text('p', 'desc', op.description));
    var tagLine = el('div', {});
    (op.tags || []).forEach(function (t) { tagLine.append(text('span', 'chip', t)); });
    if (op.operationId) tagLine.append(text('span', 'muted mono', op.operationId));
    if (tagLine.childNodes.length) body.append(tagLine);
    if (params.length) body.append(text('h4', '', 'Parameters'), paramsTable(params));
    if (op.requestBody) {
      var rb = deref(op.requestBody);
      body.append(el('h4', {}, 'Request body', rb.required ? el('span', { 'class': 'req' }, ' * required') : null));
      if (rb.description) body.append(text('div', 'desc', rb.description));
      body.append(contentBlocks(rb.content));
    }
    var codes = Object.keys(op.responses || {}).sort();
    if (codes.length) {
      body.append(text('h4', '', 'Responses'));
      codes.forEach(function (code) {
        var r = deref(op.responses[code]);
        body.append(el('div', { 'class': 'response' },
          text('span', 'status s' + String(code).charAt(0), code), ' ',
          text('span', 'desc', r.description || ''),
          contentBlocks(r.content)));
      });
    }
    node.append(header, body);
    return node;
  }

  function render() {
    var info = spec.info || {};
    document.title = (info.title || 'API') + ' reference';
    app.textContent = '';
    app.append(el('h1', {}, info.title || 'API reference', info.version ? text('span', 'version', 'v' + info.version) : null));
    if (info.description) app.append(text('p', 'desc muted', info.description));

    // Group operations by their first tag; top-level tag order comes first.
    var groups = {}, order = [], tagInfo = {};
    (spec.tags || []).forEach(function (t) { tagInfo[t.name] = t; order.push(t.name); groups[t.name] = []; });
    Object.keys(spec.paths || {}).forEach(function (path) {
      var item = spec.paths[path] || {};
      if (item.$ref) item = resolveRef(item.$ref) || {};
      METHODS.forEach(function (method) {
        var op = item[method];
        if (!op) return;
        var tag = (op.tags && op.tags[0]) || 'Other';
        if (!groups[tag]) { groups[tag] = []; order.push(tag); }
        groups[tag].push(renderOperation(path, method, op, item));
      });
    });
    order = order.filter(function (t) { return groups[t].length; });

    var toc = el('ul');
    order.forEach(function (tag) {
      toc.append(el('li', {}, el('a', { href: '#tag-' + slug(tag) }, tag), text('span', 'muted', ' (' + groups[tag].length + ')')));
    });
    app.append(el('nav', { 'class': 'toc' }, el('strong', {}, 'Contents'), toc));
    if (!order.length) app.append(text('p', 'muted', 'This API describes no operations.'));
    order.forEach(function (tag) {
      var section = el('section', { id: 'tag-' + slug(tag) }, el('h2', {}, tag));
      if (tagInfo[tag] && tagInfo[tag].description) section.append(text('p', 'desc muted', tagInfo[tag].description));
      groups[tag].forEach(function (n) { section.append(n); });
      app.append(section);
    });
  }

  function showError(message) {
    app.textContent = '';
    app.append(el('h1', {}, 'API reference'), el('div', { id: 'error', role: 'alert' }, message));
  }

  fetch(SPEC_URL, { headers: { Accept: 'application/json' } })
    .then(function (res) {
      if (!res.ok) throw new Error('HTTP ' + res.status + (res.statusText ? ' ' + res.statusText : ''));
      return res.json();
    })
    .then(function (json) {
      if (!json || typeof json !== 'object') throw new Error('response is not a JSON object');
      spec = json;
      render();
    })
    .catch(function (err) {
      showError('Could not load the API description from ' + SPEC_URL + ': ' + (err && err.message ? err.message : err));
    });
})();
