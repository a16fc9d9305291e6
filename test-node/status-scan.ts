import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

/**
 * Finds the HTTP statuses the worker's source can answer, by reading it: the status of every error
 * (`status: 404` in ApiError / toErrorObject / Response init), every status argument of a response
 * helper (`respond(c, doc, 201)`, `errorResponse(c, 405, ...)`, `c.body(null, 204)`,
 * `new HTTPException(413)`, either branch of a `cond ? 200 : 201`), the status keys of a status
 * table (`{ 400: { title, ... } }`), and 200 for a response helper called without a status.
 * Strings and comments are blanked first, so a number in a message or a comment never counts.
 */

export interface StatusUse {
  status: number;
  where: string;
}

const RESPONSE_CALL =
  /(?:\brespond|\berrorResponse|\bc\.(?:body|text|json|html|newResponse|redirect)|\bnew\s+(?:Response|HTTPException))\s*\(/g;
const DEFAULTS_TO_200 = /^(?:respond|c\.(?:body|text|json|html))\b/;
const STATUS = /^[1-5][0-9][0-9]$/;

/** Replaces the contents of strings, template literals (not their `${}` code) and comments with spaces. */
export function blankStringsAndComments(source: string): string {
  const out = source.split("");
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== "\n") out[k] = " ";
  };
  // A stack of open template literals; each entry counts the braces opened inside its current `${}`.
  const templates: number[] = [];
  let i = 0;
  const inTemplateText = () => templates.length > 0 && templates[templates.length - 1] === -1;
  const scanTemplateText = () => {
    // At the first character of template text; runs to the closing backtick or to `${`.
    const start = i;
    while (i < source.length) {
      if (source[i] === "\\") {
        i += 2;
        continue;
      }
      if (source[i] === "`") {
        blank(start, i);
        templates.pop();
        i++;
        return;
      }
      if (source[i] === "$" && source[i + 1] === "{") {
        blank(start, i);
        templates[templates.length - 1] = 0;
        i += 2;
        return;
      }
      i++;
    }
    blank(start, i);
  };
  while (i < source.length) {
    if (inTemplateText()) {
      scanTemplateText();
      continue;
    }
    const ch = source[i];
    const next = source[i + 1];
    if (ch === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      const stop = end < 0 ? source.length : end;
      blank(i, stop);
      i = stop;
    } else if (ch === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      const stop = end < 0 ? source.length : end + 2;
      blank(i, stop);
      i = stop;
    } else if (ch === '"' || ch === "'") {
      const start = i++;
      while (i < source.length && source[i] !== ch && source[i] !== "\n") i += source[i] === "\\" ? 2 : 1;
      blank(start + 1, i);
      i++;
    } else if (ch === "`") {
      templates.push(-1);
      i++;
    } else if (templates.length > 0 && ch === "{") {
      templates[templates.length - 1]++;
      i++;
    } else if (templates.length > 0 && ch === "}") {
      if (templates[templates.length - 1] === 0) templates[templates.length - 1] = -1;
      else templates[templates.length - 1]--;
      i++;
    } else if (ch === "/" && /[(,=:[!&|?{};]\s*$/.test(source.slice(Math.max(0, i - 20), i))) {
      // A regular expression literal: its body may hold quotes or numbers.
      const start = i++;
      let inClass = false;
      while (i < source.length && source[i] !== "\n") {
        if (source[i] === "\\") i++;
        else if (source[i] === "[") inClass = true;
        else if (source[i] === "]") inClass = false;
        else if (source[i] === "/" && !inClass) break;
        i++;
      }
      blank(start + 1, i);
      i++;
    } else {
      i++;
    }
  }
  return out.join("");
}

/** The top-level, comma-separated arguments of the call whose `(` is at `open`. */
function callArguments(code: string, open: number): string[] {
  const args: string[] = [];
  let depth = 0;
  let current = "";
  for (let i = open + 1; i < code.length; i++) {
    const ch = code[i];
    if (ch === "(" || ch === "[" || ch === "{") depth++;
    if (ch === ")" || ch === "]" || ch === "}") {
      if (depth === 0) {
        args.push(current);
        return args.map((arg) => arg.trim()).filter((arg) => arg !== "");
      }
      depth--;
    }
    if (ch === "," && depth === 0) {
      args.push(current);
      current = "";
    } else {
      current += ch;
    }
  }
  return args;
}

/** Status literals an argument can evaluate to: `201`, or both branches of `cond ? 200 : 201`. */
function statusLiterals(argument: string): number[] {
  if (STATUS.test(argument)) return [Number(argument)];
  const ternary = argument.match(/\?\s*([1-5][0-9][0-9])\s*:\s*([1-5][0-9][0-9])$/);
  return ternary ? [Number(ternary[1]), Number(ternary[2])] : [];
}

function lineOf(code: string, index: number): number {
  return code.slice(0, index).split("\n").length;
}

export function statusesInSource(source: string, file: string): StatusUse[] {
  const code = blankStringsAndComments(source);
  const uses: StatusUse[] = [];
  const add = (status: number, index: number) => uses.push({ status, where: `${file}:${lineOf(code, index)}` });

  for (const match of code.matchAll(/\bstatus\s*:\s*([1-5][0-9][0-9])\b/g)) add(Number(match[1]), match.index);
  for (const match of code.matchAll(/[{,]\s*([1-5][0-9][0-9])\s*:\s*\{/g)) add(Number(match[1]), match.index);
  for (const match of code.matchAll(RESPONSE_CALL)) {
    const open = match.index + match[0].length - 1;
    const args = callArguments(code, open);
    const statuses = args.flatMap(statusLiterals);
    for (const status of statuses) add(status, match.index);
    const callee = match[0].replace(/\s*\($/, "");
    if (statuses.length === 0 && DEFAULTS_TO_200.test(callee) && !args.some((arg) => /\bstatus\b/.test(arg))) {
      // respond(c, document) and c.text(body) answer 200 unless given another status.
      if (!(callee === "respond" && args.length >= 3)) add(200, match.index);
    }
  }
  return uses;
}

function typescriptFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return typescriptFiles(path);
    return path.endsWith(".ts") && !path.endsWith(".d.ts") ? [path] : [];
  });
}

/**
 * Every status the worker's code under `srcDir` can answer, with where. `skip` tells the files that
 * are not part of the worker (the OpenAPI document's, which only describe statuses), by their path
 * from the repository root.
 */
export function statusesAnsweredByCode(
  srcDir: string,
  skip: (file: string) => boolean = () => false,
): Map<number, string[]> {
  const result = new Map<number, string[]>();
  for (const path of typescriptFiles(srcDir)) {
    const file = relative(join(srcDir, ".."), path);
    if (skip(file)) continue;
    for (const { status, where } of statusesInSource(readFileSync(path, "utf8"), file)) {
      result.set(status, [...(result.get(status) ?? []), where]);
    }
  }
  return result;
}
