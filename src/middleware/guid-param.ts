import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { invalidGuid, parseGuid } from "../resources/resource-object";

/**
 * The `:guid` path parameter of a resource, validated (`c.req.valid("param")`), lower-cased: a 400 before
 * anything else is read (docs/API.md §7, §9).
 */
export const guidParam: MiddlewareHandler<AppEnv, "/:guid", { out: { param: { guid: string } } }> = async (c, next) => {
  const guid = parseGuid(c.req.param("guid"));
  if (guid === undefined) throw invalidGuid();
  c.req.addValidatedData("param", { guid });
  await next();
};
