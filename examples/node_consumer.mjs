// A Node.js consumer of a filter stream with the `eventsource` package,
// which reconnects by itself and resumes with Last-Event-ID.
//
//   npm install eventsource@3
//   node examples/node_consumer.mjs --token "$TOKEN" --track rust,redis
import { EventSource } from "eventsource";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, i, all) => {
    if (arg.startsWith("--")) pairs.push([arg.slice(2), all[i + 1]]);
    return pairs;
  }, []),
);
const url = args.url ?? "http://127.0.0.1:8080";
const max = Number(args["max-events"] ?? 0);
if (!args.token) {
  console.error("usage: node_consumer.mjs --token TOKEN [--url URL] [--track a,b] [--max-events N]");
  process.exit(2);
}
const query = new URLSearchParams({ track: args.track ?? "", access_token: args.token });
const es = new EventSource(`${url}/api/v1/stream/filter?${query}`);
let seen = 0;
es.addEventListener("status", (e) => {
  const s = JSON.parse(e.data).status;
  console.log(`@${s.login}: ${s.message}`);
  seen += 1;
  if (max && seen >= max) {
    es.close();
    process.exit(0);
  }
});
for (const kind of ["warning", "disconnect"]) {
  es.addEventListener(kind, (e) => console.error(`-- ${kind}: ${e.data}`));
}
es.onerror = () => console.error(`-- reconnecting (last event ${es.lastEventId || "none"})`);
