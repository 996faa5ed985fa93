-- heads.lua: the first item of each non-empty lane and stage of the named queues.
--
-- Keys, under the queue's prefix P (see tickwheel/queue/redis.py), all read only:
--   P prio:<queue>              zset  the priorities of the queue's non-empty lanes
--   P lane:<queue>:<priority>   list  its head
--   P staged:<queue>            zset  the priorities of the queue's non-empty stages
--   P stage:<queue>:<priority>  zset  its earliest item
--
-- ARGV: prefix, queue names.
-- Returns, per queue in the order named, the heads of its non-empty lanes and stages
-- (packed items).

local prefix = ARGV[1]
local heads = {}
for i = 2, #ARGV do
  local found = {}
  for _, priority in ipairs(redis.call('ZRANGE', prefix .. 'prio:' .. ARGV[i], 0, -1)) do
    local head = redis.call('LINDEX', prefix .. 'lane:' .. ARGV[i] .. ':' .. priority, 0)
    if head then found[#found + 1] = head end
  end
  for _, priority in ipairs(redis.call('ZRANGE', prefix .. 'staged:' .. ARGV[i], 0, -1)) do
    local head = redis.call('ZRANGE', prefix .. 'stage:' .. ARGV[i] .. ':' .. priority, 0, 0)
    if head[1] then found[#found + 1] = head[1] end
  end
  heads[i - 1] = found
end
return heads
