// The server's error answers, read in one place: the API's `{"error": {code, message, action}}`
// and, on an app's requests, JSON-RPC's `{"error": {code (a number), message, data: {action}}}`
// (the server makes both in web/error_render.py). Anything else (a proxy's page, no body)
// becomes an error that names the status.

export class ApiError extends Error {
  constructor(status, { code, message, action } = {}) {
    super(message || (status ? `the server answered ${status}` : "the server could not be reached"));
    this.status = status;
    this.code = code ?? (status === 404 ? "not_found" : "error");
    this.action = action || "";
  }
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** The error a response's (already read) body describes. */
export function errorFrom(status, body) {
  const error = isObject(body?.error) ? body.error : {};
  const text = (v) => (typeof v === "string" && v ? v : undefined);
  const code = typeof error.code === "string" || Number.isInteger(error.code) ? error.code : undefined;
  return new ApiError(status, { code, message: text(error.message), action: text(error.action) ?? text(error.data?.action) });
}

/** The error of a failed response, reading its body. */
export async function errorOf(response) {
  return errorFrom(response.status, await response.json().catch(() => null));
}

/** fetch, then the JSON body (null for 204 or an empty body); a failure throws its ApiError
 * (status 0: the server could not be reached). */
export async function fetchJson(url, options = {}) {
  let response;
  try {
    response = await fetch(url, { credentials: "same-origin", ...options });
  } catch (exc) {
    if (exc?.name === "AbortError") throw exc; // the caller stopped it
    throw new ApiError(0, { code: "network", message: "The server could not be reached.", action: "Check the connection and try again." });
  }
  if (!response.ok) throw await errorOf(response);
  if (response.status === 204) return null;
  return response.json().catch(() => null);
}

/** Options of a request with a JSON body. */
export const jsonBody = (method, value) => ({ method, headers: { "content-type": "application/json" }, body: JSON.stringify(value) });
