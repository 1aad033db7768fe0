"""Answerability: does a retrieved passage answer what the question asks, before anything is written?

A question is answered only when one of its passages is about what it asks. Three kinds of evidence
decide, for each passage (``features``):

- retrieval: the passage's cosine similarity to the question, its rank and its distance to the best;
- the subject: the question's search terms weighted by how rare they are in the tenant's help centre
  (``retrieval.subject``); the share of that weight the passage states, the weight of the most telling
  term it lacks, and the share no passage of the help centre states at all ("student", "Chicago",
  "Android"): an incidental shared word ("discount", "app", "weekend") is common and weighs little;
- meaning: the best cosine of the question and one sentence, list item or table row of the passage.

A small logistic model (``model``, a JSON artefact built by ``manage.py train_answerability``,
``train``) turns them into P(the passage answers the question); the question is answerable when its
best passage reaches the locale's calibrated threshold. Otherwise the customer is handed off
(``pipeline.not_covered``) with up to three related articles, and nothing is cached.
"""
from supportbot.answerability.decision import Verdict, assess, related_articles

__all__ = ["Verdict", "assess", "related_articles"]
