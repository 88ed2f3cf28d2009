// A small Markdown renderer that builds DOM nodes. Text only ever enters
// the page through text nodes (createTextNode / textContent), never as
// HTML, so `<script>` or `<img onerror>` in a message stays visible text.
// Links keep only http(s) and mailto addresses; images are not rendered.

export function renderMarkdown(source) {
  const root = document.createElement("div");
  root.className = "md";
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)\s*$/);
    if (fence) {
      const code = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) {
        code.push(lines[i]);
        i += 1;
      }
      i += 1;
      const pre = el("pre");
      const codeEl = el("code", code.join("\n"));
      pre.append(codeEl);
      root.append(pre);
      continue;
    }
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      const h = el(`h${Math.min(heading[1].length + 2, 6)}`);
      inline(h, heading[2]);
      root.append(h);
      i += 1;
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) {
        quoted.push(lines[i].replace(/^\s*>\s?/, ""));
        i += 1;
      }
      const quote = el("blockquote");
      quote.append(renderMarkdown(quoted.join("\n")));
      root.append(quote);
      continue;
    }
    const item = /^\s*([-*+]|\d+[.)])\s+/;
    if (item.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const list = el(ordered ? "ol" : "ul");
      while (i < lines.length && item.test(lines[i])) {
        const li = el("li");
        inline(li, lines[i].replace(item, ""));
        list.append(li);
        i += 1;
      }
      root.append(list);
      continue;
    }
    const paragraph = [];
    while (i < lines.length && lines[i].trim() && !item.test(lines[i]) &&
           !/^(#{1,6})\s/.test(lines[i]) && !/^\s*(```|~~~)/.test(lines[i]) &&
           !/^\s*>/.test(lines[i])) {
      paragraph.push(lines[i]);
      i += 1;
    }
    const p = el("p");
    paragraph.forEach((text, n) => {
      if (n > 0) p.append(document.createElement("br"));
      inline(p, text);
    });
    root.append(p);
  }
  return root;
}

// Code spans, links, bold and italics; everything else is text.
// Underscores inside a word (snake_case, __proto__) are not emphasis.
const INLINE = /(`+)([^`]+?)\1|\[([^\]]+)\]\(([^)\s]+)\)|\*\*([^*]+)\*\*|(?<!\w)__([^_]+)__(?!\w)|\*([^*\s][^*]*)\*|(?<!\w)_([^_\s][^_]*)_(?!\w)/;

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
