import { gpodderUsername } from "../auth/gpodder-username";
import { secretHash, typeableSecret } from "../auth/secrets";
import { verifiedCredentials } from "../auth/verified-credentials";
import { createAppPassword, deleteAppPassword, MAX_APP_PASSWORDS, type StoredAppPassword } from "../db/app-passwords";
import type { Database } from "../db/database";
import { ApiError } from "../jsonapi";
import { toRfc3339 } from "../timestamps";

export const APP_PASSWORD_TYPE = "app-password";
export const MAX_LABEL_CHARACTERS = 100;
/**
 * Six groups of five typeable characters (auth/secrets.ts): 150 random bits (the contract asks for at least 128),
 * and a person copying it from the account page onto a phone's keyboard meets no l/1 or O/0 to tell apart.
 */
const PASSWORD_GROUPS = 6;

export function appPasswordPath(id: string): string {
  return `/v1/app-passwords/${id}`;
}

function invalid(status: number, title: string, detail: string, pointer: string): ApiError {
  return new ApiError({ status, title, detail, source: { pointer } });
}

/**
 * The label of `POST /v1/app-passwords`, checked in docs/API.md §5's order: the document (400), `type`
 * (400 missing, 409 another), a client-chosen `id` (403: the server chooses), then `label` (422).
 */
export function parseNewAppPassword(body: unknown): string {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw invalid(400, "Invalid document", "The request body must be a JSON object.", "");
  }
  const data = (body as Record<string, unknown>).data;
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw invalid(400, "Invalid document", "The document needs a data object.", data === undefined ? "" : "/data");
  }
  const { type, id, attributes } = data as Record<string, unknown>;
  if (typeof type !== "string") {
    throw invalid(400, "Invalid resource object", `type must be the string "${APP_PASSWORD_TYPE}".`, "/data");
  }
  if (type !== APP_PASSWORD_TYPE) {
    throw invalid(409, "Type mismatch", `This endpoint takes resources of type "${APP_PASSWORD_TYPE}".`, "/data/type");
  }
  if (id !== undefined) {
    throw invalid(
      403,
      "Client-generated ids are not supported",
      "The server chooses an app password's id.",
      "/data/id",
    );
  }
  const label =
    attributes !== null && typeof attributes === "object" ? (attributes as Record<string, unknown>).label : undefined;
  if (!isValidLabel(label)) {
    throw invalid(
      422,
      "Invalid attribute",
      `label must be a string of 1 to ${MAX_LABEL_CHARACTERS} characters.`,
      label === undefined ? "/data/attributes" : "/data/attributes/label",
    );
  }
  return label;
}

/** An app password's label: 1 to 100 characters (code points, no lone surrogate). */
export function isValidLabel(label: unknown): label is string {
  const characters = typeof label === "string" && label.isWellFormed() ? [...label].length : 0;
  return characters >= 1 && characters <= MAX_LABEL_CHARACTERS;
}

export type MintResult = { kind: "created"; appPassword: StoredAppPassword; password: string } | { kind: "limit" };

/**
 * Mints an app password for the user (the API's POST, the account page's `Create app password`, a Login Flow's
 * grant): a random password, of which only the hash is stored, under the user's gpodder username. With
 * `uncollectedUntil` (a grant's flow expiry, ms) it works only once its app collects it, and not at all after.
 */
export async function mintAppPassword(
  db: Database,
  userId: string,
  label: string,
  uncollectedUntil?: number,
): Promise<MintResult> {
  const password = typeableSecret(PASSWORD_GROUPS);
  const result = await createAppPassword(db, userId, {
    id: crypto.randomUUID(),
    username: await gpodderUsername(userId),
    label,
    createdAt: Date.now(),
    passwordHash: await secretHash(password),
    ...(uncollectedUntil === undefined ? {} : { expiresAt: uncollectedUntil }),
  });
  return result.kind === "limit" ? result : { ...result, password };
}

/**
 * Revokes one app password: it and every session opened with it stop working, here at once (this isolate's
 * cache forgets them), everywhere within 60 s. False when the user has no such app password.
 */
export async function revokeAppPassword(db: Database, userId: string, id: string): Promise<boolean> {
  if (!(await deleteAppPassword(db, userId, id))) return false;
  verifiedCredentials.forget((entry) => entry.userId === userId && entry.appPasswordId === id);
  return true;
}

/** The resource; `password` only in the answer to the POST that minted it. */
export function toAppPasswordResource(row: StoredAppPassword, password?: string) {
  return {
    type: APP_PASSWORD_TYPE,
    id: row.id,
    attributes: {
      label: row.label,
      username: row.username,
      ...(password === undefined ? {} : { password }),
      createdAt: toRfc3339(row.createdAt),
      lastUsedAt: row.lastUsedAt === null ? null : toRfc3339(row.lastUsedAt),
    },
    links: { self: appPasswordPath(row.id) },
  };
}

export function appPasswordNotFound(): ApiError {
  return new ApiError({
    status: 404,
    title: "App password not found",
    detail: "The requested app password does not exist for the user.",
  });
}

export function appPasswordLimitReached(): ApiError {
  return new ApiError({
    status: 403,
    title: "App password limit reached",
    detail: `A user may have at most ${MAX_APP_PASSWORDS} app passwords; delete one first.`,
    meta: { maxAppPasswords: MAX_APP_PASSWORDS },
  });
}
