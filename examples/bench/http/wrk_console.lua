-- console_queue / console_dead_letters: an operator's reads, as the console makes them.
-- Parameters: token (an operator's), mode ("queue" or "dead_letters"), pages (of 20 dead
-- letters: each request reads one chosen at random), seed.

function init(args)
   local p = bench_params(args)
   headers = { ["Authorization"] = "Bearer " .. p.token }
   mode = p.mode
   pages = p.pages
   math.randomseed(p.seed + 7919 * tid)
   count = 0
end

function request()
   count = count + 1
   if mode == "queue" then
      return wrk.format("GET", "/api/admin/queue", headers)
   end
   return wrk.format("GET", "/api/admin/dead-letters?page_size=20&page="
      .. string.format("%d", math.random(1, pages)), headers)
end
