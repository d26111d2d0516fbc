"""Model backends behind one async interface (see base.ChatModel) and the routing that picks them."""
