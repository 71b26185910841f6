"""The octopus xApp: A1 policy type 30500 -> E2SM-RC CONTROL action 100 on the gNBs' droppers."""
