-- search_broad: the prepared broad searches (one common word, a salary_min, a page), in order
-- across threads (request n = count * nthreads + tid, continuing from the previous run), so no
-- request repeats an earlier one and the cache never has its page.
-- Parameters: paths (comma-separated), nthreads, start (per thread).

function init(args)
   local p = bench_params(args)
   paths = bench_split(p.paths)
   nthreads = p.nthreads
   count = p.start[tid + 1]
end

function request()
   local n = count * nthreads + tid
   count = count + 1
   return wrk.format("GET", paths[(n % #paths) + 1])
end
