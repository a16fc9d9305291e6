import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { invalidGuid, parseGuid } from "../resources/resource-object";

/**
 * A resource's UUID path parameter `:name`, validated (`c.req.valid("param")`), lower-cased: a 400 before
 * anything else is read (docs/API.md §7, §9).
 */
export function uuidParam<Name extends string>(
  name: Name,
): MiddlewareHandler<AppEnv, `/:${Name}`, { out: { param: Record<Name, string> } }> {
  return async (c, next) => {
    const id = parseGuid(c.req.param(name));
    if (id === undefined) throw invalidGuid();
    c.req.addValidatedData("param", { [name]: id } as Record<Name, string>);
    await next();
  };
}

/** A subscription's `:guid`. */
export const guidParam = uuidParam("guid");
