// A Node.js consumer of a filter stream with the `eventsource` package,
// which reconnects by itself and resumes with Last-Event-ID.
//
//   npm install eventsource@3
//   node examples/node_consumer.mjs --token "$TOKEN" --track rust,redis
//
// One of N partitioned consumers of the firehose (a token with the
// firehose scope; run k = 1..N, together they get every event once, each
// resuming its own partition):
//
//   node examples/node_consumer.mjs --token "$TOKEN" --stream firehose --partition 2/4
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
  console.error("usage: node_consumer.mjs --token TOKEN [--url URL] [--track a,b] [--stream firehose|sample|search] [--partition k/N] [--max-events N]");
  process.exit(2);
}
const stream = args.stream ?? "filter";
const query = new URLSearchParams({ access_token: args.token });
if (stream === "filter") query.set("track", args.track ?? "");
if (args.partition) {
  const [k, n] = args.partition.split("/");
  query.set("partition", k);
  query.set("partitions", n);
}
const es = new EventSource(`${url}/api/v1/stream/${stream}?${query}`);
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
