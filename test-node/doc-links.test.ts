import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { readerDocuments } from "./readme-examples";

/**
 * Every relative link of the README and docs/*.md leads somewhere: the file or directory exists, and an anchor
 * (`#section`, in the same document or another) names a heading of that document as GitHub renders it (or an
 * HTML `id`/`name`). Links to other sites are not followed (no network in tests).
 */

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DOCUMENTS = readerDocuments(ROOT);

/** The document with fenced code blocks blanked, line for line. */
function withoutFences(markdown: string): string {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split("\n")) {
    const opening = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && opening) {
      fence = opening;
      lines.push("");
    } else if (fence !== undefined) {
      if (line.trimStart().startsWith(fence)) fence = undefined;
      lines.push("");
    } else {
      lines.push(line);
    }
  }
  return lines.join("\n");
}

/** The prose: no fenced blocks, no inline code spans (their brackets are no links). */
function proseOf(markdown: string): string {
  return withoutFences(markdown).replace(/(`+)[^`\n]*?\1/g, "");
}

/** Inline links `[text](target "title")` and HTML `href`s, with the line each is on. */
function linksOf(markdown: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  for (const [index, line] of proseOf(markdown).split("\n").entries()) {
    for (const match of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ target: match[1], line: index + 1 });
    }
    for (const match of line.matchAll(/\bhref="([^"]+)"/g)) links.push({ target: match[1], line: index + 1 });
  }
  return links;
}

/** GitHub's anchor of a heading (github-slugger): lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
function slugOf(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\s_-]/gu, "").replace(/ /g, "-");
}

/** Every anchor a document offers: its headings' slugs (repeats numbered as GitHub does) and HTML ids. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(markdown).split("\n")) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const slug = slugOf(heading);
      const count = seen.get(slug) ?? 0;
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
      seen.set(slug, count + 1);
    }
    for (const match of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]);
  }
  return anchors;
}

/** What is wrong with a relative link of `document`, or undefined when it leads somewhere. */
function brokenLink(document: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto: ...: another site
  const hash = target.indexOf("#");
  const path = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const file =
    path === ""
      ? join(ROOT, document)
      : resolve(ROOT, path.startsWith("/") ? `.${path}` : join(dirname(document), path));
  if (!file.startsWith(ROOT)) return `${path} is outside the repository`;
  if (!existsSync(file)) return `${relative(ROOT, file)} does not exist`;
  if (anchor === undefined || anchor === "") return undefined;
  if (statSync(file).isDirectory() || !file.endsWith(".md"))
    return `#${anchor} points into ${relative(ROOT, file)}, which has no headings`;
  return anchorsOf(readFileSync(file, "utf8")).has(anchor)
    ? undefined
    : `${relative(ROOT, file)} has no heading #${anchor}`;
}

describe("links of the README and docs/", () => {
  for (const document of DOCUMENTS) {
    it(`${document}: every relative link and anchor resolves`, () => {
      const links = linksOf(readFileSync(join(ROOT, document), "utf8"));
      const broken = links.flatMap(({ target, line }) => {
        const problem = brokenLink(document, target);
        return problem ? [`${document}:${line} (${target}): ${problem}`] : [];
      });
      expect(broken).toEqual([]);
    });
  }

  it("the README links into docs/ and to its own sections (the check has links to check)", () => {
    const targets = linksOf(readFileSync(join(ROOT, "README.md"), "utf8")).map((link) => link.target);
    expect(targets.some((target) => target.startsWith("docs/"))).toBe(true);
    expect(targets.some((target) => target.startsWith("#"))).toBe(true);
  });
});

describe("the link check itself", () => {
  it("slugs headings as GitHub does", () => {
    expect(slugOf("Running it for people: `npm run admin`")).toBe("running-it-for-people-npm-run-admin");
    expect(slugOf("Use it from gPodder, AntennaPod or Kasts")).toBe("use-it-from-gpodder-antennapod-or-kasts");
    expect(slugOf("15. What one account may cost everyone, part 2 (storage, retention, erasure)")).toBe(
      "15-what-one-account-may-cost-everyone-part-2-storage-retention-erasure",
    );
    expect(slugOf("A [link](x.md) and <b>tags</b> in_names")).toBe("a-link-and-tags-in_names");
  });

  it("numbers repeated headings, ignores code, and finds links outside code only", () => {
    const markdown = [
      "# A",
      "## A",
      "```sh",
      "# not a heading [x](nowhere.md)",
      "```",
      "See [b](#a-1) and `[c](no.md)`.",
    ].join("\n");
    expect([...anchorsOf(markdown)]).toEqual(["a", "a-1"]);
    expect(linksOf(markdown)).toEqual([{ target: "#a-1", line: 6 }]);
  });

  it("reports a missing file and a missing heading", () => {
    expect(brokenLink("README.md", "docs/NOPE.md")).toMatch(/does not exist/);
    expect(brokenLink("README.md", "docs/README-ops.md#no-such-section")).toMatch(/has no heading #no-such-section/);
    expect(brokenLink("README.md", "docs/README-ops.md#backups")).toBeUndefined();
    expect(brokenLink("docs/README-ops.md", "../bench/SOAK.md")).toBeUndefined();
    expect(brokenLink("README.md", "https://example.com/#anything")).toBeUndefined();
  });
});
