// A small weather-and-files agent served over anpord's HTTP agent protocol (docs/http-agents.md),
// in Node.js with its standard library only. No model: it follows fixed rules on the message, so
// every case is deterministic, yet it behaves like a tool-using agent:
//
//   "weather in CITY"      calls get_weather and answers from a table
//   "forecast for CITY"    the same, answered as structured data (turn.end "data")
//   "delete FILE"          asks for approval (an input request), then deletes or keeps the file
//   "count to N slowly"    emits a "progress" event every 100 ms: meant to be cancelled
//   "what did I ask?"      answers from the session's history
//   anything else          says what it can do
//
//   node server.mjs [--port 8788] [--host 127.0.0.1]     (--port 0 picks a free port)

import http from "node:http";

const FORECASTS = {
  lisbon: { city: "Lisbon", conditions: "Sunny", high_c: 24 },
  oslo: { city: "Oslo", conditions: "Snowy", high_c: -3 },
  lima: { city: "Lima", conditions: "Cloudy", high_c: 19 },
};
const MAX_BODY = 8 << 20;

const sessions = new Map(); // id -> { history, pending, turn }
let nextSession = 1;

// -- HTTP plumbing ----------------------------------------------------------------------------

function sendJson(res, status, body) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

function sendError(res, status, error, message) {
  sendJson(res, status, { error, message });
}

function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) reject(new Error("the request body is too large"));
      else chunks.push(chunk);
    });
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8").trim();
      if (!text) return resolve({});
      try {
        const body = JSON.parse(text);
        if (body === null || typeof body !== "object" || Array.isArray(body)) {
          reject(new Error("the body must be a JSON object"));
        } else resolve(body);
      } catch (err) {
        reject(new Error(`the body is not JSON: ${err.message}`));
      }
    });
    req.on("error", reject);
  });
}

// One turn's event stream: NDJSON lines written as they happen, turn.end last.
class Stream {
  constructor(res) {
    this.res = res;
    this.closed = false;
    res.writeHead(200, { "Content-Type": "application/x-ndjson", "Cache-Control": "no-store" });
  }
  event(type, data = {}) {
    if (!this.closed) this.res.write(JSON.stringify({ type, ...data }) + "\n");
  }
  end(status, { message = null, data = null, error = null, error_kind = undefined } = {}) {
    this.event("turn.end", { status, message, data, error, error_kind });
    this.closed = true;
    this.res.end();
  }
}

// -- the agent --------------------------------------------------------------------------------

function sleep(ms, turn) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    turn.wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
}

function forecastFor(text) {
  const match = /(?:in|for)\s+([A-Za-z]+)/.exec(text);
  return match ? { asked: match[1], forecast: FORECASTS[match[1].toLowerCase()] } : null;
}

async function runTurn(session, text, out, turn) {
  out.event("usage", { input_tokens: text.split(/\s+/).length, output_tokens: 8, cost: 0 });
  const lowered = text.toLowerCase();

  if (lowered.startsWith("weather") || lowered.startsWith("forecast")) {
    const found = forecastFor(text);
    if (!found) return { message: "Which city?" };
    out.event("tool.called", { call_id: "c1", name: "get_weather", input: { city: found.asked } });
    if (!found.forecast) {
      const error = `no forecast for ${found.asked}`;
      out.event("tool.result", { call_id: "c1", name: "get_weather", output: null, status: "failed", error });
      return { message: `Sorry, I have no forecast for ${found.asked}.` };
    }
    const f = found.forecast;
    out.event("tool.result", { call_id: "c1", name: "get_weather", output: f, status: "completed" });
    if (lowered.startsWith("forecast")) return { message: JSON.stringify(f), data: f };
    return { message: `It is ${f.conditions} in ${f.city}, ${f.high_c}°C.` };
  }

  const del = /^delete\s+(\S+)/i.exec(text);
  if (del) {
    const path = del[1];
    const requestId = `delete:${path}`;
    session.pending = { requestId, path };
    out.event("input.requested", {
      request_id: requestId,
      prompt: `Delete ${path}?`,
      options: [{ id: "approve", label: "Delete it" }, { id: "deny", label: "Keep it" }],
      tool_name: "delete_file",
      input: { path },
    });
    return { status: "waiting" };
  }

  const count = /^count to (\d+) slowly/i.exec(text);
  if (count) {
    const n = Number(count[1]);
    for (let i = 1; i <= n; i++) {
      await sleep(100, turn);
      if (turn.cancelled) return { status: "cancelled", error: `cancelled after ${i - 1} steps` };
      out.event("progress", { n: i });
    }
    return { message: `Counted to ${n}.` };
  }

  if (lowered.includes("what did i ask")) {
    const asked = session.history.filter((m) => m.role === "user").slice(0, -1).map((m) => m.content);
    return { message: asked.length ? `You asked: ${asked.join("; ")}` : "You have not asked anything yet." };
  }

  return { message: "I can tell the weather, delete files (with your approval) and count slowly." };
}

// The answer to the delete approval: the turn carrying it finishes the work the question paused.
function resumeTurn(session, responses, out) {
  const pending = session.pending;
  const answer = responses.find((r) => pending && r.request_id === pending.requestId);
  if (!answer) {
    const ids = responses.map((r) => r.request_id).join(", ");
    return { status: "failed", error: `no pending input request ${ids}`, error_kind: "request" };
  }
  session.pending = null;
  if (answer.option_id !== "approve") return { message: `Kept ${pending.path}.` };
  out.event("tool.called", { call_id: "d1", name: "delete_file", input: { path: pending.path } });
  out.event("tool.result", { call_id: "d1", name: "delete_file", output: { deleted: pending.path }, status: "completed" });
  return { message: `Deleted ${pending.path}.` };
}

// -- routes -----------------------------------------------------------------------------------

async function handleTurn(req, res, session) {
  const body = await readJson(req);
  const hasInput = body.input !== undefined && body.input !== null;
  const responses = Array.isArray(body.responses) ? body.responses : [];
  if (hasInput === responses.length > 0) {
    return sendError(res, 400, "bad_request", "a turn carries either 'input' or 'responses'");
  }
  if (session.turn) return sendError(res, 409, "turn_running", "a turn is running in this session");

  const turn = { cancelled: false, wake: () => {} };
  session.turn = turn;
  const out = new Stream(res);
  // The client hanging up mid-turn cancels the turn, as a cancel request would.
  res.on("close", () => {
    if (!out.closed) {
      turn.cancelled = true;
      turn.wake();
    }
  });
  try {
    let result;
    if (hasInput) {
      if (session.pending) {
        result = { status: "failed", error: "the session is waiting on an input request: answer it first", error_kind: "request" };
      } else {
        const text = typeof body.input === "string" ? body.input : JSON.stringify(body.input);
        session.history.push({ role: "user", content: text });
        result = await runTurn(session, text, out, turn);
      }
    } else {
      result = resumeTurn(session, responses, out);
    }
    const status = result.status ?? "completed";
    if (status === "completed" && result.message != null) {
      session.history.push({ role: "assistant", content: result.message });
      out.event("message.completed", { role: "assistant", text: result.message, data: result.data ?? null });
    }
    out.end(status, {
      message: result.message ?? null, data: result.data ?? null, error: result.error ?? null,
      error_kind: result.error_kind,
    });
  } catch (err) {
    out.end("failed", { error: `agent raised ${err.name}: ${err.message}`, error_kind: "agent" });
  } finally {
    session.turn = null;
  }
}

async function route(req, res) {
  const { pathname } = new URL(req.url, "http://agent");
  const parts = pathname.split("/").filter(Boolean); // ["v1", "sessions", id, action]
  if (parts[0] !== "v1") return sendError(res, 404, "not_found", `no route ${req.method} ${pathname}`);

  if (parts.length === 2 && parts[1] === "info") {
    if (req.method !== "GET") return sendError(res, 405, "method_not_allowed", `${req.method} is not allowed`);
    return sendJson(res, 200, {
      protocol: "anpord-agent",
      protocol_version: 1,
      name: "node weather agent",
      capabilities: { input_requests: true, cancel: true, structured_input: false },
    });
  }
  if (parts[1] !== "sessions") return sendError(res, 404, "not_found", `no route ${req.method} ${pathname}`);

  if (parts.length === 2 && req.method === "POST") {
    const body = await readJson(req);
    const id = typeof body.session_id === "string" && body.session_id ? body.session_id : `node_${nextSession++}`;
    if (sessions.has(id)) return sendError(res, 409, "session_exists", `session ${id} exists already`);
    sessions.set(id, { history: [], pending: null, turn: null });
    return sendJson(res, 201, { session_id: id });
  }

  const id = decodeURIComponent(parts[2] ?? "");
  const session = sessions.get(id);
  if (!session) return sendError(res, 404, "not_found", `no session ${id}`);
  const action = parts[3];

  if (action === undefined && req.method === "DELETE") {
    if (session.turn) {
      session.turn.cancelled = true;
      session.turn.wake();
    }
    sessions.delete(id);
    res.writeHead(204);
    return res.end();
  }
  if (action === "turns" && req.method === "POST") return handleTurn(req, res, session);
  if (action === "cancel" && req.method === "POST") {
    const running = session.turn !== null;
    if (running) {
      session.turn.cancelled = true;
      session.turn.wake();
    }
    return sendJson(res, 200, { cancelled: running });
  }
  return sendError(res, 405, "method_not_allowed", `${req.method} is not allowed on ${pathname}`);
}

// -- start ------------------------------------------------------------------------------------

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 && process.argv[at + 1] !== undefined ? process.argv[at + 1] : fallback;
}

const server = http.createServer((req, res) => {
  route(req, res).catch((err) => {
    if (!res.headersSent) sendError(res, 400, "bad_request", err.message);
    else res.end();
  });
});
server.listen(Number(option("port", "8788")), option("host", "127.0.0.1"), () => {
  const { address, port } = server.address();
  console.log(`node agent at http://${address}:${port}`);
});
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
