-- incarnation.lua: the queue's incarnation, set to a new token if missing.
--
-- Keys, under the queue's prefix P (see tickwheel/queue/redis.py):
--   P incarnation  string  read; set when missing (a Redis that lost its data)
--
-- ARGV: prefix, a new token.
-- Returns the incarnation: the token found, or the new one if none was.

local key = ARGV[1] .. 'incarnation'
local found = redis.call('GET', key)
if found then return found end
redis.call('SET', key, ARGV[2])
return ARGV[2]
