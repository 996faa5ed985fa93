// Server-Sent Events read with fetch (EventSource cannot send an Authorization header).
import { headers } from "./api.js";

export function subscribe(path, onEvent, onState) {
  let stopped = false;
  let controller = null;
  let delay = 500;

  async function connect() {
    while (!stopped) {
      controller = new AbortController();
      try {
        const answer = await fetch(path, { headers: headers(), signal: controller.signal });
        if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
        onState(true, answer.status);
        delay = 500;
        await read(answer.body.getReader(), onEvent);
      } catch (error) {
        if (stopped) return;
        onState(false, error.message);
      }
      await new Promise((done) => setTimeout(done, delay));
      delay = Math.min(delay * 2, 10000);
    }
  }

  connect();
  return () => { stopped = true; controller?.abort(); };
}

async function read(reader, onEvent) {
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the stream ended");
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}
