-- search_uncached: every request a search no earlier request of the run made, so the cache
-- never has its page. Request n (numbered across threads: count * nthreads + tid, continuing
-- from the previous run) is spread over the query space by a multiplier coprime with its size,
-- then split into an unordered pair of distinct words, a page and a remote filter.
-- Parameters: words (comma-separated), pages, nthreads, start (per thread), mult.

function init(args)
   local p = bench_params(args)
   words = bench_split(p.words)
   pages = p.pages
   nthreads = p.nthreads
   mult = p.mult
   count = p.start[tid + 1]
   pair_a, pair_b = {}, {}
   for i = 1, #words do
      for j = i + 1, #words do
         pair_a[#pair_a + 1] = i
         pair_b[#pair_b + 1] = j
      end
   end
   npairs = #pair_a
   combos = npairs * pages * 3
end

function request()
   local n = count * nthreads + tid
   count = count + 1
   local idx = (n * mult) % combos
   local pair = idx % npairs
   local rest = math.floor(idx / npairs)
   local page = rest % pages + 1
   local remote = math.floor(rest / pages)
   local path = "/api/jobs?q=" .. words[pair_a[pair + 1]] .. "+" .. words[pair_b[pair + 1]] ..
      "&page=" .. string.format("%d", page)
   if remote == 1 then
      path = path .. "&remote=true"
   elseif remote == 2 then
      path = path .. "&remote=false"
   end
   return wrk.format("GET", path)
end
