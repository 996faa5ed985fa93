-- pop.lua: the best items of the named queues, after promoting the staged ones due.
--
-- Keys, under the queue's prefix P (see tickwheel/queue/redis.py):
--   P staged:<queue>            zset  read; a priority whose stage emptied is removed
--   P stage:<queue>:<priority>  zset  the items due by `now` leave it
--   P lane:<queue>:<priority>   list  promoted items join its tail; popped from its head
--   P prio:<queue>              zset  promoted lanes added; read for the best lane;
--                                     emptied lanes removed
--   P depth                     hash  each queue's count falls by the items popped
--
-- ARGV: prefix, limit, now (epoch ms, the cluster's clock), queue names. Pops up to
-- `limit` items, highest priority first (ties go to the queue named first), FIFO within
-- a lane.
-- Returns {{queue index (0-based), priority, {items}, ...}, {depth of each queue}, ms
-- until the earliest item still staged is due (-1: none)}.

local prefix, limit, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local queues = {unpack(ARGV, 4)}
-- Staged items due by now join the tail of their lane (up to a batch per lane: the
-- work of a pop stays bounded, and what is left is promoted by the next).
local next_due = -1
for i = 1, #queues do
  local staged = prefix .. 'staged:' .. queues[i]
  for _, priority in ipairs(redis.call('ZRANGE', staged, 0, -1)) do
    local stage = prefix .. 'stage:' .. queues[i] .. ':' .. priority
    local ready = redis.call('ZRANGE', stage, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
    if #ready > 0 then
      local lane = prefix .. 'lane:' .. queues[i] .. ':' .. priority
      for from = 1, #ready, 1000 do
        redis.call('RPUSH', lane, unpack(ready, from, math.min(from + 999, #ready)))
      end
      redis.call('ZADD', prefix .. 'prio:' .. queues[i], priority, priority)
      redis.call('ZREMRANGEBYRANK', stage, 0, #ready - 1)
    end
    local first = redis.call('ZRANGE', stage, 0, 0, 'WITHSCORES')
    if first[1] then
      local due = tonumber(first[2])
      if next_due < 0 or due < next_due then next_due = due end
    else
      redis.call('ZREM', staged, priority)
    end
  end
end
local function head(i)
  local top = redis.call('ZREVRANGE', prefix .. 'prio:' .. queues[i], 0, 0, 'WITHSCORES')
  if top[1] then return {top[1], tonumber(top[2])} end
  return false
end
local heads = {}
for i = 1, #queues do heads[i] = head(i) end
local taken, popped = 0, {}
while taken < limit do
  local best = nil
  for i = 1, #queues do
    if heads[i] and (best == nil or heads[i][2] > heads[best][2]) then best = i end
  end
  if best == nil then break end
  local queue, priority = queues[best], heads[best][1]
  local lane = prefix .. 'lane:' .. queue .. ':' .. priority
  local want = limit - taken
  local items = redis.call('LPOP', lane, want) or {}
  if #items > 0 then
    popped[#popped + 1] = best - 1
    popped[#popped + 1] = priority
    popped[#popped + 1] = items
    taken = taken + #items
    redis.call('HINCRBY', prefix .. 'depth', queue, -#items)
  end
  if #items < want or redis.call('EXISTS', lane) == 0 then  -- the lane is empty
    redis.call('ZREM', prefix .. 'prio:' .. queue, priority)
    heads[best] = head(best)
  end
end
local depths = {}
if #queues > 0 then depths = redis.call('HMGET', prefix .. 'depth', unpack(queues)) end
return {popped, depths, (next_due < 0) and -1 or math.max(0, next_due - now)}
