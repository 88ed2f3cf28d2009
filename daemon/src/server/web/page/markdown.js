// A small Markdown renderer that builds DOM nodes. Text only ever enters
// the page through text nodes (createTextNode / textContent), never as
// HTML, so `<script>` or `<img onerror>` in a message stays visible text.
// Links keep only http(s) and mailto addresses; images are not rendered.

// Blocks: fenced code, headings, quotes, rules, GitHub tables (with their
// columns' alignment), bulleted and numbered lists (numbered from their
// first number, nested by indentation, as CommonMark reads them), and
// paragraphs whose lines stay as written.

export function renderMarkdown(source) {
  const root = document.createElement("div");
  root.className = "md";
  appendBlocks(root, source.replace(/\r\n?/g, "\n").split("\n"));
  return root;
}

const FENCE = /^\s*(```+|~~~+)\s*([\w+#.-]*)[^`]*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)(\s+#+)?\s*$/;
const QUOTE = /^\s{0,3}>/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])(\s+|$)(.*)$/;
const DELIMITER = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

// Appends the blocks of `lines` to `parent`.
function appendBlocks(parent, lines) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i += 1;
    } else if (FENCE.test(line)) {
      i = appendCode(parent, lines, i);
    } else if (HEADING.test(line)) {
      const heading = line.match(HEADING);
      const h = el(`h${Math.min(heading[1].length + 2, 6)}`);
      inline(h, heading[2]);
      parent.append(h);
      i += 1;
    } else if (QUOTE.test(line)) {
      const quoted = [];
      while (i < lines.length && QUOTE.test(lines[i])) {
        quoted.push(lines[i].replace(/^\s*>\s?/, ""));
        i += 1;
      }
      const quote = el("blockquote");
      appendBlocks(quote, quoted);
      parent.append(quote);
    } else if (RULE.test(line)) {
      parent.append(el("hr"));
      i += 1;
    } else if (isTable(lines, i)) {
      i = appendTable(parent, lines, i);
    } else if (ITEM.test(line)) {
      i = appendList(parent, lines, i);
    } else {
      i = appendParagraph(parent, lines, i);
    }
  }
}

// Whether a line starts a block other than a paragraph (and so ends one).
function startsBlock(lines, i) {
  const line = lines[i];
  return !line.trim() || FENCE.test(line) || HEADING.test(line) || QUOTE.test(line) ||
    RULE.test(line) || ITEM.test(line) || isTable(lines, i);
}

function appendCode(parent, lines, i) {
  const fence = lines[i].match(FENCE);
  const code = [];
  i += 1;
  while (i < lines.length && !lines[i].trim().startsWith(fence[1])) {
    code.push(lines[i]);
    i += 1;
  }
  const pre = el("pre");
  const codeEl = el("code", code.join("\n"));
  if (fence[2]) codeEl.className = `language-${fence[2]}`;
  pre.append(codeEl);
  parent.append(pre);
  return i + 1;
}

function appendParagraph(parent, lines, i) {
  const p = el("p");
  let first = true;
  while (i < lines.length && (first || !startsBlock(lines, i))) {
    if (!first) p.append(document.createElement("br"));
    inline(p, lines[i].trim());
    first = false;
    i += 1;
  }
  parent.append(p);
  return i;
}

// The cells of a table's line: between its pipes, `\|` kept as a pipe.
function cells(line) {
  let row = line.trim();
  if (row.startsWith("|")) row = row.slice(1);
  if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
  return row.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

// A GitHub table starts with a head line of cells and a delimiter line
// with as many columns.
function isTable(lines, i) {
  return i + 1 < lines.length && lines[i].includes("|") && DELIMITER.test(lines[i + 1]) &&
    cells(lines[i]).length === cells(lines[i + 1]).length;
}

function appendTable(parent, lines, i) {
  const head = cells(lines[i]);
  const alignments = cells(lines[i + 1]).map((cell) => {
    const left = cell.startsWith(":");
    const right = cell.endsWith(":");
    return left && right ? "center" : right ? "right" : left ? "left" : "";
  });
  const row = (tag, texts) => {
    const tr = el("tr");
    head.forEach((_, column) => {
      const cell = el(tag);
      if (alignments[column]) cell.style.textAlign = alignments[column];
      inline(cell, texts[column] ?? "");
      tr.append(cell);
    });
    return tr;
  };
  const table = el("table");
  const thead = el("thead");
  thead.append(row("th", head));
  const tbody = el("tbody");
  i += 2;
  while (i < lines.length && lines[i].trim() && lines[i].includes("|") &&
         !FENCE.test(lines[i]) && !QUOTE.test(lines[i])) {
    tbody.append(row("td", cells(lines[i])));
    i += 1;
  }
  table.append(thead, tbody);
  // Wide tables scroll on their own, not the conversation.
  const frame = el("div");
  frame.className = "table";
  frame.append(table);
  parent.append(frame);
  return i;
}

// Leading spaces (a tab counts as four).
function indentOf(line) {
  return line.match(/^\s*/)[0].replace(/\t/g, "    ").length;
}

// A list and its items; an item's lines indented under it (nested lists,
// further paragraphs, code) are its own blocks.
function appendList(parent, lines, i) {
  const first = lines[i].match(ITEM);
  const indent = indentOf(first[1]);
  const ordered = /\d/.test(first[2]);
  const list = el(ordered ? "ol" : "ul");
  if (ordered) {
    const start = parseInt(first[2], 10);
    if (start !== 1) list.start = start;
  }
  let loose = false;
  while (i < lines.length) {
    const item = lines[i].match(ITEM);
    if (!item || indentOf(item[1]) !== indent || /\d/.test(item[2]) !== ordered) break;
    const width = indent + item[2].length + Math.max(item[3].length, 1);
    const body = [item[4]];
    i += 1;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) {
        let next = i;
        while (next < lines.length && !lines[next].trim()) next += 1;
        const nextItem = next < lines.length && lines[next].match(ITEM);
        const same = nextItem && indentOf(nextItem[1]) === indent && /\d/.test(nextItem[2]) === ordered;
        if (next < lines.length && (indentOf(lines[next]) > indent || same)) loose = true;
        if (next >= lines.length || indentOf(lines[next]) <= indent) break;
        for (; i < next; i += 1) body.push("");
        continue;
      }
      if (indentOf(line) > indent) {
        body.push(line.replace(/^\s*/, (lead) => " ".repeat(Math.max(indentOf(lead) - width, 0))));
        i += 1;
        continue;
      }
      // A lazy line goes on the item's paragraph; anything else ends it.
      if (startsBlock(lines, i)) break;
      body.push(line);
      i += 1;
    }
    while (i < lines.length && !lines[i].trim()) {
      let next = i;
      while (next < lines.length && !lines[next].trim()) next += 1;
      const nextItem = next < lines.length && lines[next].match(ITEM);
      if (!nextItem || indentOf(nextItem[1]) !== indent || /\d/.test(nextItem[2]) !== ordered) break;
      i = next;
    }
    const li = el("li");
    appendBlocks(li, body);
    list.append(li);
  }
  // A tight list's items hold their words, not paragraphs.
  if (!loose) {
    for (const li of list.children) {
      for (const p of [...li.children].filter((child) => child.tagName === "P")) {
        p.replaceWith(...p.childNodes);
      }
    }
  }
  parent.append(list);
  return i;
}

// Code spans, links (and bare <https://…> ones), bold, italics and
// strikethrough; everything else is text. Underscores inside a word
// (snake_case, __proto__) are not emphasis.
const INLINE = /(`+)([^`]+?)\1|\[([^\]]+)\]\(([^)\s]+)\)|\*\*([^*]+)\*\*|(?<!\w)__([^_]+)__(?!\w)|\*([^*\s][^*]*)\*|(?<!\w)_([^_\s][^_]*)_(?!\w)|~~([^~]+)~~|<((?:https?|mailto):[^<>\s]+)>/;

function inline(parent, text) {
  let rest = text;
  while (rest) {
    const match = rest.match(INLINE);
    if (!match) {
      parent.append(document.createTextNode(rest));
      return;
    }
    if (match.index > 0) parent.append(document.createTextNode(rest.slice(0, match.index)));
    if (match[2] !== undefined) {
      parent.append(el("code", match[2]));
    } else if (match[3] !== undefined) {
      parent.append(link(match[3], match[4]));
    } else if (match[10] !== undefined) {
      parent.append(link(match[10], match[10]));
    } else if (match[9] !== undefined) {
      const del = el("del");
      inline(del, match[9]);
      parent.append(del);
    } else if (match[5] !== undefined || match[6] !== undefined) {
      const strong = el("strong");
      inline(strong, match[5] ?? match[6]);
      parent.append(strong);
    } else {
      const em = el("em");
      inline(em, match[7] ?? match[8]);
      parent.append(em);
    }
    rest = rest.slice(match.index + match[0].length);
  }
}

function link(label, href) {
  let url = null;
  try {
    url = new URL(href);
  } catch {
    url = null;
  }
  if (!url || !["http:", "https:", "mailto:"].includes(url.protocol)) {
    return document.createTextNode(`[${label}](${href})`);
  }
  const a = el("a", label);
  a.href = url.href;
  a.rel = "noopener noreferrer";
  a.target = "_blank";
  return a;
}

export function el(tag, text) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  return node;
}
