// Builds with wrangler's own bundler (`wrangler deploy --dry-run --minify`, as `npm run build` and a
// real deploy do) and measures what the app's bundle weighs and what takes the space.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";

const require = createRequire(import.meta.url);
const WRANGLER = join(dirname(require.resolve("wrangler/package.json")), "bin", "wrangler.js");

/**
 * Runs `wrangler deploy [entry] --dry-run --outdir <outdir> --minify --metafile` and returns the
 * path of the bundled module and wrangler's own size line ("Total Upload: ... / gzip: ..."). `env`
 * names a wrangler environment (`--env`); `minify: false` keeps the names (a profile's functions readable).
 * @param {{ root: string, outdir: string, entry?: string, env?: string, minify?: boolean }} options
 */
export function buildWorker({ root, outdir, entry, env, minify = true }) {
  const args = [WRANGLER, "deploy", ...(entry ? [entry] : []), "--dry-run", "--outdir", outdir];
  if (minify) args.push("--minify");
  if (env) args.push("--env", env);
  args.push("--metafile", join(outdir, "bundle-meta.json"));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", FORCE_COLOR: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0)
        return reject(new Error(`wrangler build of ${entry ?? "the app"} failed (exit ${code}):\n${output}`));
      const script = readdirSync(outdir).find((file) => file.endsWith(".js"));
      if (!script) return reject(new Error(`wrangler wrote no .js file to ${outdir}:\n${output}`));
      const sizeLine = output.match(/Total Upload:[^\n]*/)?.[0]?.trim();
      resolve({ script: join(outdir, script), metafile: join(outdir, "bundle-meta.json"), sizeLine });
    });
  });
}

/** "zod", "@hono/zod-validator", "src (the app)", ... for a path in a metafile or source map. */
function owner(path) {
  const modules = [...path.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)];
  if (modules.length > 0) return modules.at(-1)[1];
  if (/(^|\/)src\//.test(path)) return "src (the app)";
  if (/(^|\/)bench\//.test(path)) return "bench";
  return path;
}

function shortPath(path) {
  const at = path.lastIndexOf("node_modules/");
  if (at >= 0) return path.slice(at + "node_modules/".length);
  const src = path.search(/(^|\/)src\//);
  return src >= 0 ? path.slice(src).replace(/^\//, "") : path;
}

const VLQ = new Map([..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"].map((c, i) => [c, i]));

/** Decodes one segment of a source map's `mappings` into its numbers (relative values). */
function decodeSegment(segment) {
  const values = [];
  let value = 0;
  let shift = 0;
  for (const char of segment) {
    const digit = VLQ.get(char);
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
    } else {
      values.push(value & 1 ? -(value >>> 1) : value >>> 1);
      value = 0;
      shift = 0;
    }
  }
  return values;
}

/**
 * Splits the generated code by the source each stretch maps to (source map v3), groups the stretches
 * by package (`ownerOf`) and gzips each group on its own: an estimate of each package's share of the
 * gzip size (the groups compress a little worse alone than together).
 */
function gzipByOwner(code, map, ownerOf) {
  const chunks = new Map();
  const lines = code.split("\n");
  const mappingLines = map.mappings.split(";");
  const owners = map.sources.map((path) => ownerOf(path));
  let source = 0;
  const push = (key, text) => {
    if (text.length === 0) return;
    const list = chunks.get(key) ?? [];
    list.push(text);
    chunks.set(key, list);
  };
  for (let l = 0; l < lines.length; l++) {
    const line = lines[l];
    const segments = (mappingLines[l] ?? "").split(",").filter(Boolean);
    let column = 0;
    let cursor = 0;
    let current = "(unmapped)";
    for (const segment of segments) {
      const values = decodeSegment(segment);
      column += values[0];
      push(current, line.slice(cursor, column));
      cursor = column;
      if (values.length >= 4) {
        source += values[1];
        current = owners[source] ?? "(unmapped)";
      } else {
        current = "(unmapped)";
      }
    }
    push(current, `${line.slice(cursor)}\n`);
  }
  const sizes = new Map();
  for (const [key, list] of chunks) {
    const text = list.join("");
    sizes.set(key, { bytes: Buffer.byteLength(text), gzip: gzipSync(text).byteLength });
  }
  return sizes;
}

/**
 * @param {{ script: string, metafile: string, sizeLine?: string }} build
 */
export function analyseBundle(build) {
  const code = readFileSync(build.script, "utf8");
  const bytes = Buffer.byteLength(code);
  // zlib's default level on the bundled module, as wrangler computes the "gzip" of "Total Upload".
  const gzip = gzipSync(code).byteLength;

  const meta = JSON.parse(readFileSync(build.metafile, "utf8"));
  const output = Object.entries(meta.outputs).find(([path]) => path.endsWith(".js"))?.[1];
  const byPackage = new Map();
  const files = [];
  for (const [path, input] of Object.entries(output?.inputs ?? {})) {
    const key = owner(path);
    byPackage.set(key, (byPackage.get(key) ?? 0) + input.bytesInOutput);
    files.push({ file: shortPath(path), bytes: input.bytesInOutput });
  }
  files.sort((a, b) => b.bytes - a.bytes);

  // Some packages ship source maps whose paths escape the package (drizzle-orm's resolve to
  // node_modules/src/...): such a source is matched to the package whose bundled file has the same
  // path below the package root, extension aside.
  const byRest = new Map();
  for (const path of Object.keys(output?.inputs ?? {})) {
    const match = path.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)\.[cm]?[jt]s$/);
    if (match && !byRest.has(match[2])) byRest.set(match[2], match[1]);
  }
  const ownerOf = (path) => {
    const key = owner(path);
    if (byPackage.has(key)) return key;
    const rest = path.match(/node_modules\/(?:@[^/]+\/)?[^/]+\/(.*)\.[cm]?[jt]sx?$/)?.[1];
    return (rest && byRest.get(rest)) ?? key;
  };
  let gzipShares = new Map();
  let localesGzip = null;
  try {
    const map = JSON.parse(readFileSync(`${build.script}.map`, "utf8"));
    gzipShares = gzipByOwner(code, map, ownerOf);
    localesGzip = gzipByOwner(code, map, (path) => (/zod\/.*locales\//.test(path) ? "locales" : "rest")).get(
      "locales",
    )?.gzip;
  } catch {
    // no source map: the minified byte counts of the metafile still tell the story
  }
  const packages = [...byPackage.entries()]
    .map(([name, minified]) => ({ name, minified, gzipAlone: gzipShares.get(name)?.gzip ?? null }))
    .sort((a, b) => b.minified - a.minified);

  // zod's locale files: every language's error messages, pulled in whole by `import { z } from "zod"`.
  const locales = files.filter((f) => /^zod\/.*\/locales\//.test(f.file));
  return {
    bytes,
    gzip,
    wranglerSizeLine: build.sizeLine,
    packages,
    topFiles: files.slice(0, 12),
    zodLocales: {
      files: locales.length,
      bytes: locales.reduce((sum, f) => sum + f.bytes, 0),
      gzipAlone: localesGzip ?? null,
    },
  };
}
