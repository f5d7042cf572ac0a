"""The calls benchmark (``voxflow bench --calls``): many voice-agent calls at once, as their
listeners hear them. ``plan`` scripts the calls, ``lines`` speaks each protocol as the agent
frameworks do, ``turn`` plays one reply at real time, ``level`` runs N calls, ``run`` the
levels against voxflow and a Wyoming peer, ``report`` prints and plots them."""
