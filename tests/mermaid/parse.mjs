// Parses Mermaid diagrams with the real Mermaid parser (`mermaid.parse`, which throws on a syntax
// error), all in this one process. Reads a JSON list of {"where": ..., "text": ...} on stdin and
// writes a JSON list of {"where": ..., "type": <diagram type> | null, "error": <message> | null}
// to the file named by the first argument (stdout stays free for whatever Mermaid logs).
//
// Mermaid is its self-contained build, mermaid.min.js, beside this script (tests/test_mermaid.py
// takes it from the pinned release's tarball): run as a browser runs it, it sets `mermaid` on the
// global object. It sanitises labels with DOMPurify, which needs a `window` when it loads: without
// one, some diagram types (stateDiagram-v2) fail with "DOMPurify.addHook is not a function". A small
// DOM (linkedom) is put on `globalThis.window` first.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runInThisContext } from 'node:vm';
import { parseHTML } from 'linkedom';

globalThis.window = parseHTML('<!doctype html><html><body></body></html>').window;
const bundle = new URL('./mermaid.min.js', import.meta.url);
runInThisContext(readFileSync(bundle, 'utf8'), { filename: fileURLToPath(bundle) });
const { mermaid } = globalThis;

const diagrams = JSON.parse(readFileSync(0, 'utf8'));
const results = [];
for (const { where, text } of diagrams) {
  try {
    const parsed = await mermaid.parse(text);
    results.push({ where, type: parsed.diagramType, error: null });
  } catch (error) {
    results.push({ where, type: null, error: String(error?.message ?? error) });
  }
}
writeFileSync(process.argv[2], JSON.stringify(results));
