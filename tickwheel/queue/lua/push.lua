-- push.lua: items into lanes (at their tail or head) or into stages.
--
-- Keys, under the queue's prefix P (see tickwheel/queue/redis.py):
--   P lane:<queue>:<priority>   list  written ("tail", "head")
--   P prio:<queue>              zset  the lane's priority added
--   P stage:<queue>:<priority>  zset  written ("stage"), scored by due_ms
--   P staged:<queue>            zset  the stage's priority added
--   P depth                     hash  each queue's count grows by its items
--   P wake                      channel  each queue filled is published
--
-- ARGV: prefix, "head" | "tail" | "stage", then per lane: queue, priority, count, and
-- count items ("stage": count (due_ms, item) pairs, which wait in the lane's stage until
-- due).
-- Returns the new depth of each queue, in the order the queues first appear.

local prefix, mode = ARGV[1], ARGV[2]
local width = (mode == 'stage') and 2 or 1
local added, order = {}, {}
local at = 3
while at <= #ARGV do
  local queue, priority = ARGV[at], ARGV[at + 1]
  local first, last = at + 3, at + 2 + width * tonumber(ARGV[at + 2])
  local count = 0
  if mode == 'stage' then
    local stage = prefix .. 'stage:' .. queue .. ':' .. priority
    for from = first, last, 1000 do  -- unpack is bounded by Lua's C stack
      count = count + redis.call('ZADD', stage, unpack(ARGV, from, math.min(from + 999, last)))
    end
    redis.call('ZADD', prefix .. 'staged:' .. queue, priority, priority)
  else
    local lane = prefix .. 'lane:' .. queue .. ':' .. priority
    local verb = (mode == 'head') and 'LPUSH' or 'RPUSH'
    for from = first, last, 1000 do
      redis.call(verb, lane, unpack(ARGV, from, math.min(from + 999, last)))
    end
    redis.call('ZADD', prefix .. 'prio:' .. queue, priority, priority)
    count = last - first + 1
  end
  if added[queue] == nil then
    order[#order + 1] = queue
    added[queue] = 0
  end
  added[queue] = added[queue] + count
  at = last + 1
end
local depths = {}
for i, queue in ipairs(order) do
  depths[i] = redis.call('HINCRBY', prefix .. 'depth', queue, added[queue])
  redis.call('PUBLISH', prefix .. 'wake', queue)
end
return depths
