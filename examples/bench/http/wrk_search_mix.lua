-- mix_*: one search mix's prepared searches (each distinct), in order across threads: request
-- n = base + count * nthreads + tid, where base is where the previous run of the mix stopped, so
-- no request repeats an earlier one (until the list runs out) and the cache never has its page.
-- Parameters: paths (comma-separated), nthreads, base.

function init(args)
   local p = bench_params(args)
   paths = bench_split(p.paths)
   nthreads = p.nthreads
   base = p.base
   count = 0
end

function request()
   local n = base + count * nthreads + tid
   count = count + 1
   return wrk.format("GET", paths[(n % #paths) + 1])
end
