"""The planner: turns a call into a validated policy, a built driver and its ready launch
sequence, learning what only a build tells. Imports only drivers, policies and core."""
