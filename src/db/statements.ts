import { fillPlaceholders, type SQL } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";

/**
 * Statements written once with Drizzle (the schema's tables and columns, `sql.placeholder` for values),
 * rendered to SQL text once per isolate, then only bound per use. Drizzle's own `prepare()` ties a
 * statement to one client, but every request here has its own D1 session (read replication), so the
 * text is kept and the session prepares it. Rendering per request cost ~70 µs a read and ~200 µs a bulk
 * item; binding costs nothing measurable.
 */
export interface Statement {
  readonly sql: string;
  bind(client: D1Database | D1DatabaseSession, values: Record<string, unknown>): D1PreparedStatement;
}

const dialect = new SQLiteAsyncDialect();

export function statement(query: SQL): Statement {
  let rendered: { sql: string; params: unknown[] } | undefined;
  const render = () => {
    rendered ??= dialect.sqlToQuery(query);
    return rendered;
  };
  return {
    get sql() {
      return render().sql;
    },
    bind(client, values) {
      const { sql, params } = render();
      return client.prepare(sql).bind(...fillPlaceholders(params, values));
    },
  };
}
