// The dashboard speaks the public HTTP API, with the token the operator gave (if any).
const TOKEN_KEY = "tickwheel.token";

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export function token() {
  return localStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  if (value) localStorage.setItem(TOKEN_KEY, value);
  else localStorage.removeItem(TOKEN_KEY);
}

export function headers(extra = {}) {
  const found = token();
  return found ? { ...extra, Authorization: `Bearer ${found}` } : extra;
}

export async function api(path, { method = "GET", body, params } = {}) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(params || {})) {
    for (const one of [].concat(value)) {
      if (one !== undefined && one !== null && one !== "") url.searchParams.append(key, one);
    }
  }
  const answer = await fetch(url, {
    method,
    headers: headers(body ? { "Content-Type": "application/json" } : {}),
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await answer.text();
  const parsed = text ? JSON.parse(text) : null;
  if (!answer.ok) throw new ApiError(answer.status, parsed);
  return parsed;
}
