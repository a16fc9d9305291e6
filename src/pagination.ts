import * as z from "zod";
import { ApiError } from "./jsonapi";

export const DEFAULT_PAGE_SIZE = 25;
export const MAX_PAGE_SIZE = 100;
/** Keeps the row offset an exact integer; such pages are simply empty. */
export const MAX_PAGE_NUMBER = Math.floor(Number.MAX_SAFE_INTEGER / MAX_PAGE_SIZE);

export interface PageParams {
  number: number;
  size: number;
}

const PAGE_NUMBER = "page[number]";
const PAGE_SIZE = "page[size]";

/** Decimal digits only: `1.5`, `1e3`, `+2`, ` 3` and the empty string are all refused. */
const decimal = z
  .string()
  .regex(/^[0-9]+$/)
  .transform(Number);

/**
 * Query parameters of a collection (docs/API.md §3). Names JSON:API reserves (`include`, `sort`,
 * `fields[...]`, `filter[...]`, other `page[...]`, any all-lowercase name) are refused; names with
 * another character (camelCase, implementation-specific) are ignored.
 */
export const pageQuerySchema = z
  .object({
    [PAGE_NUMBER]: decimal.pipe(z.number().int().min(1).max(MAX_PAGE_NUMBER)).optional(),
    [PAGE_SIZE]: decimal.pipe(z.number().int().min(1).max(MAX_PAGE_SIZE)).optional(),
  })
  .catchall(z.unknown())
  .superRefine((query, ctx) => {
    for (const name of Object.keys(query)) {
      if (name === PAGE_NUMBER || name === PAGE_SIZE) continue;
      if (isReservedParameter(name)) ctx.addIssue({ code: "custom", path: [name], message: "reserved" });
    }
  })
  .transform(
    (query): PageParams => ({
      number: query[PAGE_NUMBER] ?? 1,
      size: query[PAGE_SIZE] ?? DEFAULT_PAGE_SIZE,
    }),
  );

/** A query parameter JSON:API reserves for itself (a family name, or all lowercase a-z). */
export function isReservedParameter(name: string): boolean {
  return /^(fields|filter|page)\[/.test(name) || /^[a-z]+$/.test(name);
}

/** The 400 for a query the schema refused: `source.parameter` names the parameter. */
export function pageQueryError(error: z.core.$ZodError): ApiError {
  const issue = error.issues[0];
  const parameter = String(issue.path[0]);
  if (parameter === PAGE_NUMBER) {
    return new ApiError({
      status: 400,
      title: "Invalid query parameter",
      detail: `${PAGE_NUMBER} must be a whole number from 1 to ${MAX_PAGE_NUMBER}, given once.`,
      source: { parameter },
    });
  }
  if (parameter === PAGE_SIZE) {
    const tooBig = issue.code === "too_big";
    return new ApiError({
      status: 400,
      title: "Invalid query parameter",
      detail: `${PAGE_SIZE} must be a whole number from 1 to ${MAX_PAGE_SIZE}, given once.`,
      source: { parameter },
      ...(tooBig ? { meta: { maxSize: MAX_PAGE_SIZE } } : {}),
    });
  }
  return unsupportedQueryParameter(parameter);
}

export function unsupportedQueryParameter(parameter: string): ApiError {
  return new ApiError({
    status: 400,
    title: "Unsupported query parameter",
    detail: `This endpoint does not support the query parameter ${parameter}.`,
    source: { parameter },
  });
}

export function pageLink(path: string, page: PageParams): string {
  return `${path}?${PAGE_NUMBER}=${page.number}&${PAGE_SIZE}=${page.size}`;
}

/** Top-level pagination links (docs/API.md §4): effective values, number first, literal brackets. */
export function paginationLinks(path: string, page: PageParams, total: number) {
  const last = Math.max(1, Math.ceil(total / page.size));
  const at = (number: number) => pageLink(path, { number, size: page.size });
  return {
    self: at(page.number),
    first: at(1),
    prev: page.number > 1 ? at(page.number - 1) : null,
    next: page.number < last ? at(page.number + 1) : null,
    last: at(last),
  };
}
