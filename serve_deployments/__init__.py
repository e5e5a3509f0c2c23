"""Ray Serve apps: the LLM labeler (``labeler.py``: HTTP API in ``http_api.py``, config in
``configs.py``) and the reward-model server (``reward_model.py``)."""
