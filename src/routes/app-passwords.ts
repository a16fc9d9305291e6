import { Hono } from "hono";
import * as z from "zod";
import { findAppPassword, listAppPasswords } from "../db/app-passwords";
import type { AppEnv } from "../env";
import { ApiError, absoluteUrl, dataDocument, respond } from "../jsonapi";
import { jsonBody } from "../middleware/json-body";
import { negotiate } from "../middleware/negotiation";
import { noQueryParameters } from "../pagination";
import {
  appPasswordLimitReached,
  appPasswordNotFound,
  appPasswordPath,
  mintAppPassword,
  parseNewAppPassword,
  revokeAppPassword,
  toAppPasswordResource,
} from "../resources/app-password";

const COLLECTION_PATH = "/v1/app-passwords";

const jsonApi = negotiate("none");
const anyJson = jsonBody(z.unknown(), () => new ApiError({ status: 400, title: "Invalid document", detail: "" }));

/** App passwords: what apps speaking the gpodder.net API sign in with (docs/API.md §14). */
export const appPasswordRoutes = new Hono<AppEnv>()

  // Mint one: the password is in this answer only; only its hash is stored.
  .post("/", jsonApi, noQueryParameters, anyJson, async (c) => {
    const label = parseNewAppPassword(c.req.valid("json"));
    const result = await mintAppPassword(c.get("db"), c.get("userId"), label);
    if (result.kind === "limit") throw appPasswordLimitReached();
    return respond(c, dataDocument(toAppPasswordResource(result.appPassword, result.password)), 201, {
      Location: absoluteUrl(c, appPasswordPath(result.appPassword.id)),
    });
  })

  .get("/", jsonApi, noQueryParameters, async (c) => {
    const rows = await listAppPasswords(c.get("db"), c.get("userId"), Date.now());
    return respond(
      c,
      dataDocument(
        rows.map((row) => toAppPasswordResource(row)),
        { links: { self: COLLECTION_PATH } },
      ),
    );
  })

  .get("/:id", jsonApi, noQueryParameters, async (c) => {
    const row = await findAppPassword(c.get("db"), c.get("userId"), c.req.param("id"), Date.now());
    if (!row) throw appPasswordNotFound();
    return respond(c, dataDocument(toAppPasswordResource(row)));
  })

  // Revoke: the password and every session opened with it stop working (here at once, everywhere within 60 s).
  .delete("/:id", jsonApi, noQueryParameters, async (c) => {
    if (!(await revokeAppPassword(c.get("db"), c.get("userId"), c.req.param("id")))) throw appPasswordNotFound();
    return c.body(null, 204);
  });
