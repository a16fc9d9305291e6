import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/**
 * The repository stands alone: a clone has no documents beside it, so no file may send a reader to one.
 * These are the ways such references were written: a sibling `shared` directory (relative or absolute), the
 * specification's file name, and the decisions document by name or by section number. The API's rules
 * live in docs/API.md.
 */
const OUTSIDE_REFERENCES = [
  /\.\.\/shared\b/,
  /\/work\/shared\b/,
  /\bshared\/seed\b/,
  /\bseed\/0{3}_[0-9a-f]+/,
  /\bCONTRACT\b/,
];
/** This file spells the references out to find them. */
const THIS_FILE = "test-node/standalone.test.ts";

/** Every file a commit would include: tracked ones and new ones git does not ignore. */
function repositoryFiles(): string[] {
  const listing = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: ROOT,
    encoding: "utf8",
  });
  return [...new Set(listing.split("\0").filter((path) => path !== ""))];
}

describe("the repository stands alone", () => {
  it("no committed file points outside the repository for the API's rules", () => {
    const files = repositoryFiles();
    expect(files).toEqual(expect.arrayContaining(["README.md", "docs/API.md", "SECURITY.md"]));
    const offending = files
      .filter((path) => path !== THIS_FILE)
      .flatMap((path) => {
        let text: string;
        try {
          text = readFileSync(`${ROOT}${path}`, "utf8");
        } catch {
          return []; // deleted in the work tree, not committed yet
        }
        if (text.includes("\0")) return []; // binary
        return text
          .split("\n")
          .flatMap((line, index) =>
            OUTSIDE_REFERENCES.some((pattern) => pattern.test(line)) ? [`${path}:${index + 1}: ${line.trim()}`] : [],
          );
      });
    expect(offending).toEqual([]);
  });

  it("would notice such a reference", () => {
    for (const line of ["see ../shared/CONTRACT.md", "(CONTRACT 5)", "/work/shared/x", "seed/000_72e31f3.txt"]) {
      expect(
        OUTSIDE_REFERENCES.some((pattern) => pattern.test(line)),
        line,
      ).toBe(true);
    }
  });
});
