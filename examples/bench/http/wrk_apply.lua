-- apply: candidates apply to seeded jobs; no (candidate, job) pair is ever repeated. Request n
-- (count * nthreads + tid, continuing from the previous run, so threads never share an n) is
-- candidate n % ncand applying to job (n / ncand + candidate * stride) % njobs: a bijection
-- while n < ncand * njobs (the harness checks).
-- Parameters: tokens (comma-separated bearer tokens), first_id, njobs, stride, nthreads,
-- start (per thread), body.

function init(args)
   local p = bench_params(args)
   tokens = bench_split(p.tokens)
   ncand = #tokens
   first_id = p.first_id
   njobs = p.njobs
   stride = p.stride
   nthreads = p.nthreads
   count = p.start[tid + 1]
   body = p.body
   headers = {}
   for i, t in ipairs(tokens) do
      headers[i] = { ["Authorization"] = "Bearer " .. t, ["Content-Type"] = "application/json" }
   end
end

function request()
   local n = count * nthreads + tid
   count = count + 1
   local cand = n % ncand
   local q = math.floor(n / ncand)
   local job = first_id + (q + cand * stride) % njobs
   return wrk.format("POST", "/api/jobs/" .. string.format("%d", job) .. "/applications",
      headers[cand + 1], body)
end
