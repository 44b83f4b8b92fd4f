-- job_detail: GET one seeded job chosen at random.
-- Parameters: first_id, njobs (the seeded ids are first_id .. first_id + njobs - 1), seed.

function init(args)
   local p = bench_params(args)
   first_id = p.first_id
   njobs = p.njobs
   math.randomseed(p.seed + 7919 * tid)
   count = 0
end

function request()
   count = count + 1
   return wrk.format("GET", "/api/jobs/" .. string.format("%d", first_id + math.random(0, njobs - 1)))
end
