-- Shared start of every load script (the harness puts the scenario's code after it).
-- setup() numbers the wrk threads (the global `tid`, from 0, set before init() runs);
-- done() prints one line "WRK_JSON {...}" with the run's figures. A scenario script counts
-- the requests it makes in the global `count`; done() reports each thread's final `count`.

local bench_threads = {}

function setup(thread)
   thread:set("tid", #bench_threads)
   table.insert(bench_threads, thread)
end

-- The parameters file named by the first script argument (a Lua chunk returning a table).
function bench_params(args)
   if args == nil or args[1] == nil then
      error("this script needs its parameters file as the first argument")
   end
   return dofile(args[1])
end

-- Splits "a,b,c" into {"a", "b", "c"}.
function bench_split(s)
   local out = {}
   for item in string.gmatch(s, "[^,]+") do
      out[#out + 1] = item
   end
   return out
end

function done(summary, latency, requests)
   local counts = {}
   for i, thread in ipairs(bench_threads) do
      counts[i] = string.format("%d", thread:get("count") or 0)
   end
   local secs = summary.duration / 1e6
   local rps = 0
   if secs > 0 then
      rps = summary.requests / secs
   end
   local e = summary.errors
   -- wrk counts every response with a status above 399 as a status error: those are the
   -- non-2xx answers (this API sends no 1xx or 3xx on the routes measured).
   io.write(string.format(
      'WRK_JSON {"requests":%d,"duration_s":%.3f,"rps":%.1f,"bytes":%d,' ..
      '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
      '"non_2xx":%d,"latency_ms":{"p50":%.3f,"p90":%.3f,"p99":%.3f,"max":%.3f,"mean":%.3f},' ..
      '"counts":[%s]}\n',
      summary.requests, secs, rps, summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout,
      e.status,
      latency:percentile(50) / 1000, latency:percentile(90) / 1000,
      latency:percentile(99) / 1000, latency.max / 1000, latency.mean / 1000,
      table.concat(counts, ",")))
end
