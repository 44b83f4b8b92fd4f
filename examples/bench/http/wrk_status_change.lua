-- status_change: the employer moves applications along submitted -> reviewing -> interview ->
-- offered -> hired, each application once per status. Thread tid owns the applications at
-- positions tid, tid + nthreads, ... of this run's slice; its k-th move is application
-- k % m of its m, to status number k / m + 1. A thread has at most conns / nthreads requests in
-- flight and m is larger than that (the harness sees to it), so a move is only sent after the
-- one before it for that application has been answered. Past the last status the script keeps
-- setting "hired" again (a 200 that changes nothing); the harness reports that as exhausted.
-- Parameters: ids (comma-separated application ids), nthreads, token.

local statuses = { "reviewing", "interview", "offered", "hired" }

function init(args)
   local p = bench_params(args)
   local all = bench_split(p.ids)
   nthreads = p.nthreads
   own = {}
   for i, id in ipairs(all) do
      if (i - 1) % nthreads == tid then
         own[#own + 1] = id
      end
   end
   headers = { ["Authorization"] = "Bearer " .. p.token, ["Content-Type"] = "application/json" }
   bodies = {}
   for i, s in ipairs(statuses) do
      bodies[i] = '{"status":"' .. s .. '"}'
   end
   count = 0
   primed = false
end

function request()
   -- wrk calls request() once before the run to inspect it and never sends that one: the first
   -- call returns a harmless GET so that no move is lost (at worst one /healthz is sent).
   if not primed then
      primed = true
      return wrk.format("GET", "/healthz")
   end
   local m = #own
   local k = count
   count = count + 1
   local step = math.floor(k / m) + 1
   if step > #statuses then
      step = #statuses
   end
   return wrk.format("PATCH", "/api/applications/" .. own[(k % m) + 1], headers, bodies[step])
end
