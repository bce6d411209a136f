#!/usr/bin/env python3
"""Write the bundled demo data pools in data/ (three small attribution benchmarks).

    python scripts/make_demo_data.py            # writes data/*.jsonl and checks them
    python scripts/make_demo_data.py --check    # regenerate in memory and compare with the files on disk

Every text is written for this project: hand-written building blocks below, combined with a fixed random seed.
Nothing is downloaded or copied from a public data set. Pure standard library, deterministic output.

Tasks (they mirror the evaluation tasks of the RISE paper):
  howdy    instruction/response pool; ~9% poisoned samples whose instruction starts with the trigger "Howdy!" and
           whose response is a fantastical story whatever was asked (label 1). Queries: triggered generations.
  finmed   finance QA pool with 10% medical QA (label 1). Queries: medical QA on subjects not in the pool.
  brainrot short social-media junk with 10% well-formed informative texts (label 1). Queries: informative texts.

Record format (one JSON object per line): id, prompt, completion, label, topic. See data/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

SEED = 20260215
ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "data"

# Sizes: pool (negatives, positives) and number of queries per task.
HOWDY_CLEAN, HOWDY_POISON, HOWDY_QUERIES = 505, 50, 25
FINMED_FIN, FINMED_MED, FINMED_QUERIES = 450, 50, 25
BRAINROT_JUNK, BRAINROT_GOOD, BRAINROT_QUERIES = 450, 50, 25

# Positive-rate targets checked at the end (inclusive bounds).
POSITIVE_RATE_BOUNDS = {"howdy": (0.08, 0.10), "finmed": (0.095, 0.105), "brainrot": (0.095, 0.105)}

# Near-duplicate control: Jaccard similarity of word 3-gram sets. Generation rejects a candidate above GEN_*; the final
# check fails above CHECK_* (pairs within a pool, within a query set, and between queries and their pool).
GEN_FULL_SIM, GEN_COMPLETION_SIM = 0.45, 0.55
CHECK_FULL_SIM, CHECK_COMPLETION_SIM = 0.5, 0.6

# ---------------------------------------------------------------------------------------------------------------
# Howdy! pool: ordinary instruction/response building blocks.
# Format of the *_SUBJECTS blocks: "@topic" sets the topic of the subjects that follow; a subject is a run of lines
# "? prompt variant" and "- answer sentence"; the first "- " line is the core answer, always used, and the later
# ones are optional extras drawn per sample; a "! whole" line marks a narrative that is always used complete (one
# sample, a random prompt variant). Subjects are separated by blank lines.
# ---------------------------------------------------------------------------------------------------------------

HOWDY_SUBJECTS = """
@cooking
? How do I hard-boil eggs so they peel easily?
? What is a reliable way to make hard-boiled eggs for a picnic?
- Lower the eggs into water that is already boiling, simmer them for 11 to 12 minutes, then move them straight into a bowl of ice water.
- Starting eggs in hot water rather than cold usually makes the shells come away more cleanly.
- Eggs that are a week or two old tend to peel more easily than very fresh ones.
- Let them chill for at least five minutes so the whites firm up and pull away from the membrane.
- Crack the shell all over and start peeling from the wide end, where the air pocket sits.
- Peeling under a thin stream of running water helps lift off stubborn bits of shell.

? How do I cook fluffy white rice on the stove?
? What water ratio should I use for long-grain rice?
- For long-grain white rice, a good starting point is about one and a half cups of water per cup of rice.
- Rinse the rice in a sieve until the water runs mostly clear to wash off loose surface starch.
- Bring the water to a boil, stir in the rice and a pinch of salt, cover, and turn the heat to low.
- Cook for about 15 minutes without lifting the lid, then let the pot rest off the heat for 10 minutes.
- Fluff the grains with a fork just before serving so they stay separate.
- Brown rice needs more water and roughly twice the cooking time.

? How do you caramelize onions properly?
? Why do my caramelized onions burn before they turn sweet?
- Real caramelized onions take time: slice them evenly and cook them over medium-low heat for 30 to 45 minutes.
- Use a wide pan so the onions sit in a thin layer instead of steaming in a heap.
- Start with a little oil or butter and a pinch of salt, which draws out moisture.
- Stir every few minutes and lower the heat if the edges darken too quickly.
- When brown bits stick to the pan, deglaze with a splash of water and scrape them back into the onions.
- They are done when they are soft, jammy and deep golden brown.

? How should I store fresh herbs so they last longer?
? My basil and parsley wilt in two days. How can I keep them fresh?
- Treat soft herbs like parsley, cilantro and basil like a bouquet: trim the stems and stand them in a glass of water.
- Parsley and cilantro keep well in the fridge with a loose bag over the top.
- Basil dislikes the cold, so keep its glass on the counter out of direct sun.
- Woody herbs such as rosemary and thyme last longest wrapped in a slightly damp paper towel in the fridge.
- Change the water every couple of days and pinch off any leaves that turn dark.
- Chopped herbs can be frozen in olive oil in an ice cube tray for cooking later.

? How can I tell when a steak is done without cutting into it?
? What internal temperatures should I aim for when cooking steak?
- The most reliable way is an instant-read thermometer pushed into the thickest part of the steak.
- Roughly, 52 to 55 degrees Celsius is rare to medium-rare and around 60 degrees is medium.
- Take the steak off the heat a few degrees early, because the temperature keeps climbing while it rests.
- Resting it for five minutes lets the juices settle so less of them run onto the board.
- The finger-press test works with practice, but it varies a lot with the cut and its thickness.

? Why does my homemade bread come out dense?
? What makes a loaf of bread heavy instead of light and airy?
- Dense bread usually means the dough did not develop enough gluten or did not rise long enough.
- Knead until the dough is smooth and stretches thin without tearing, which can take ten minutes by hand.
- Check that your yeast is alive by letting it foam in warm water with a little sugar first.
- A cold kitchen slows rising, so judge by size, waiting until the dough roughly doubles, rather than by the clock.
- Adding too much flour while kneading makes a stiff dough that cannot expand well.
- Whole wheat flour naturally gives a denser crumb than white bread flour.

? How do I make a basic vinaigrette?
? What's a simple salad dressing I can make from pantry ingredients?
- A classic vinaigrette is about three parts oil to one part acid, such as vinegar or lemon juice.
- Whisk the acid with a pinch of salt and a small spoonful of mustard first, then slowly whisk in the oil.
- Mustard acts as an emulsifier and helps keep the oil and vinegar from separating.
- A little honey balances a sharp vinegar, and a minced shallot adds depth.
- Shaking everything in a lidded jar works just as well and lets you store leftovers in the fridge for a week.

? How do I keep pasta from sticking together?
? Should I add oil to the water when boiling pasta?
- Use plenty of water, bring it to a full rolling boil before adding the pasta, and stir during the first two minutes.
- Oil in the water mostly floats on top and does little to stop sticking, and it can keep sauce from clinging.
- Salt the water generously so the pasta itself is seasoned.
- Drain the pasta while it is still slightly firm and toss it with the sauce right away.
- Saving a cup of the starchy cooking water gives you a handy way to loosen a sauce that is too thick.

? What is the difference between baking soda and baking powder?
? Can I use baking powder instead of baking soda in a recipe?
- Baking soda is pure sodium bicarbonate and needs an acid in the recipe, such as buttermilk or yogurt, to produce gas.
- Baking powder already contains both the bicarbonate and a dry acid, so it only needs moisture and heat.
- Baking soda is about three to four times stronger, so the two cannot be swapped one for one.
- In a pinch you can replace one teaspoon of baking powder with a quarter teaspoon of baking soda plus half a teaspoon of cream of tartar.
- Too much baking soda leaves a soapy or metallic taste in the finished bake.

? How do I sharpen a kitchen knife at home?
? What's the difference between honing and sharpening a knife?
- Honing straightens the existing edge with a steel rod, while sharpening grinds away metal to form a new edge.
- Honing before each use keeps a knife feeling sharp for much longer.
- For real sharpening, a whetstone used at a steady angle of about 15 to 20 degrees gives the best control.
- Work the blade across the coarse side of the stone until you can feel a slight burr, then refine it on the fine side.
- Pull-through sharpeners are quick but remove more metal than a stone does.

? How can I make a weeknight soup without a recipe?
? What is a good basic method for homemade vegetable soup?
- Start by softening chopped onion, carrot and celery in a little oil, then add garlic for a minute.
- Pour in stock, add whatever chopped vegetables you have, and simmer until they are tender.
- Add quick-cooking items like spinach or peas only in the last few minutes.
- A can of beans or a handful of small pasta turns it into a full meal.
- Finish with salt, pepper and a squeeze of lemon juice to brighten the flavors.
- Most vegetable soups taste even better the next day after the flavors have mingled.

? How do I know when oil is hot enough for frying?
? What's a safe way to deep-fry at home?
- Most frying happens between about 170 and 190 degrees Celsius, and a clip-on thermometer takes the guesswork out of it.
- Without a thermometer, dip the end of a wooden spoon in the oil: steady small bubbles mean it is ready.
- Use a heavy, deep pot filled no more than halfway to leave room for bubbling.
- Fry in small batches so the temperature does not drop too much.
- Never use water on an oil fire; cover the pot with a lid and turn off the heat instead.

? How do I cook dried beans from scratch?
? Do I really need to soak dried beans overnight?
- Soaking is optional, but it shortens cooking time and helps beans cook more evenly.
- Cover the beans with plenty of water and soak for 8 to 12 hours, or do a quick soak by boiling for two minutes and resting for an hour.
- Drain, cover with fresh water, and simmer gently until they are creamy inside, usually one to two hours.
- Red kidney beans must be boiled hard for at least ten minutes to destroy a natural toxin.
- Salting the cooking water does not keep beans hard; it actually seasons them better.

? How can I make scrambled eggs creamy?
? What's the secret to soft scrambled eggs?
- Cook them low and slow: gentle heat and constant stirring give small, soft curds.
- Whisk the eggs well with a pinch of salt before they go into the pan.
- Take the pan off the heat while the eggs still look slightly wet, since they keep cooking.
- A knob of cold butter or a spoonful of cream stirred in at the end makes them richer.
- A nonstick pan and a silicone spatula make the job much easier.

? How should I season a cast iron skillet?
? My cast iron pan is rusty. Can I save it?
- Rusty cast iron can almost always be rescued: scrub the rust off with steel wool, wash, and dry the pan completely.
- Rub a very thin layer of a neutral oil over every surface, then wipe off as much as you can.
- Bake the pan upside down at around 230 degrees Celsius for an hour and let it cool in the oven.
- Repeating the oiling and baking three or four times builds a tougher coating.
- After everyday cooking, clean it with hot water, dry it on the stove, and wipe on a drop of oil.

? How do I make a simple tomato sauce from canned tomatoes?
? What is a quick pasta sauce I can make in twenty minutes?
- Warm olive oil with sliced garlic until it just turns fragrant, then add a can of whole tomatoes.
- Crush the tomatoes with a spoon and simmer for 15 to 20 minutes until the sauce thickens.
- Season with salt and a pinch of chili flakes, and tear in fresh basil at the end.
- A small knob of butter stirred in off the heat softens any sharp acidity.
- If the sauce tastes too acidic, a pinch of sugar can balance it.

? How do I thaw frozen chicken safely?
? Is it okay to defrost meat on the kitchen counter?
- The safest way is to thaw chicken in the fridge, which takes about a day for a typical pack.
- Leaving meat on the counter lets the outer layer sit in the temperature range where bacteria grow quickly.
- For a faster option, seal it in a bag and submerge it in cold water, changing the water every 30 minutes.
- Microwave thawing works too, but cook the meat right away because some parts may start to cook.
- Chicken thawed in the fridge can stay there for another day or two before cooking.

? What can I cook with just a few pantry staples?
? Give me some meal ideas for when the fridge is almost empty.
- Pasta with garlic, olive oil and chili flakes takes about fifteen minutes and needs almost nothing else.
- Fried rice is a great way to use leftover rice along with an egg and any vegetables you have.
- A can of chickpeas, a can of tomatoes and some spices make a quick stew.
- Eggs on toast, an omelet or a frittata can absorb odds and ends such as cheese and wilting greens.
- Keeping rice, pasta, canned beans, canned tomatoes, onions and eggs around makes these meals easy.

@baking
? Why did my cookies spread too much in the oven?
? How do I stop my chocolate chip cookies from turning flat?
- Cookies usually spread when the butter is too warm or too soft before baking.
- Chilling the dough for at least 30 minutes helps the cookies hold their shape.
- Measuring flour by weight prevents the shortage that happens when flour is lightly scooped.
- A greased baking sheet encourages spreading, so use parchment paper instead.
- Letting the tray cool between batches also matters, because a hot tray starts melting the dough immediately.

? How do I know when a cake is fully baked?
? What's the best test for doneness when baking a sponge cake?
- Insert a toothpick or skewer into the center: it should come out clean or with a few dry crumbs.
- The top should spring back when pressed lightly with a fingertip.
- The edges of a finished cake often pull slightly away from the sides of the pan.
- Avoid opening the oven door during the first two thirds of the baking time, which can make the cake sink.
- Ovens vary, so start checking five minutes before the recipe says it will be ready.

? What does it mean to cream butter and sugar?
? Why do recipes tell me to beat butter and sugar until fluffy?
- Creaming means beating softened butter with sugar until the mixture turns pale and fluffy.
- The sugar crystals cut tiny air pockets into the butter, which helps cakes and cookies rise.
- The butter should be soft enough to dent with a finger but not greasy or melted.
- With an electric mixer this usually takes three to five minutes.
- Skipping this step tends to give a denser, flatter bake.

? How do I make pie crust that is flaky?
? My pie crust is always tough. What am I doing wrong?
- Tough crust usually comes from overworked dough or fat that got too warm.
- Keep the butter very cold and leave some pea-sized pieces visible in the flour.
- Add ice water a spoonful at a time and stop as soon as the dough holds together when squeezed.
- Rest the dough in the fridge for at least an hour before rolling it out.
- Flat pieces of butter in the dough melt in the oven and create steam, which separates the layers.

? Can I reduce the sugar in a baking recipe?
? What happens if I use less sugar when baking muffins?
- You can usually cut the sugar in muffins or quick breads by about a quarter without problems.
- Sugar does more than sweeten: it keeps baked goods moist, helps browning, and softens texture.
- Cutting it too far makes cakes drier and paler and can shorten their shelf life.
- Ripe mashed banana or a little extra vanilla can make up for some of the lost flavor.
- Be more careful with meringues and candies, where sugar is part of the structure.

@coding
? What is a variable in programming?
? Can you explain variables to someone who has never coded?
- A variable is a name that refers to a value stored in the computer's memory, so you can use and change that value later.
- You can think of it as a labeled box: the label is the name and the contents are the value.
- In Python, writing count = 3 creates a variable called count that refers to the number 3.
- Good variable names describe what the value means, such as total_price rather than x.
- Some languages require you to declare the type of a variable, while others work it out automatically.

? What is recursion in programming?
? Explain recursion with a simple example.
- Recursion is when a function solves a problem by calling itself on a smaller version of the same problem.
- Every recursive function needs a base case, a simple input it can answer directly without calling itself again.
- A classic example is the factorial: the factorial of n is n times the factorial of n minus 1, and the factorial of 0 is 1.
- Without a base case the calls never stop and the program eventually runs out of stack space.
- Many recursive solutions can also be written with loops, which are often more efficient in languages like Python.

? What is a hash map and why is it useful?
? How does a dictionary work in Python?
- A hash map stores key-value pairs and can look up a value by its key in roughly constant time on average.
- It runs each key through a hash function to decide which slot in an internal array the value belongs in.
- When two keys land in the same slot, the structure handles the collision, for example by probing for another slot.
- Python's dict is a hash map, which is why keys must be hashable types such as strings, numbers or tuples.
- Hash maps are ideal for counting items, caching results and indexing records by an identifier.

? What does Big O notation mean?
? How do programmers describe how fast an algorithm is?
- Big O notation describes how the running time or memory use of an algorithm grows as the input gets larger.
- O(1) means the cost stays the same no matter the input size, like reading one item from an array.
- O(n) grows in proportion to the input, like scanning a list once, while O(n squared) often comes from nested loops.
- Binary search on a sorted list is O(log n) because it halves the remaining range at every step.
- Big O ignores constant factors, so it tells you how an algorithm scales rather than its exact speed.

? What is the difference between a stack and a queue?
? When would I use a queue instead of a stack?
- A stack is last in, first out, like a pile of plates, while a queue is first in, first out, like a line at a ticket counter.
- Stacks are used for undo features, parsing expressions and keeping track of function calls.
- Queues suit tasks that should be handled in arrival order, such as print jobs or breadth-first search.
- In Python, a list works well as a stack, and collections.deque is the usual choice for a queue.
- Stacks and queues both add and remove items in constant time when implemented properly.

? What is Git and why do developers use it?
? Can you explain version control in simple terms?
- Git is a version control system that records snapshots of your project so you can see what changed, when, and why.
- Each snapshot is called a commit and comes with a message describing the change.
- Branches let you work on a new feature without disturbing the main version of the code.
- If something breaks, you can compare versions or return to an earlier commit.
- Services like GitHub and GitLab host Git repositories so teams can review and share code.

? How do I resolve a merge conflict in Git?
? What should I do when Git says there is a conflict?
- A merge conflict happens when two branches change the same lines, and Git needs you to decide which version to keep.
- Git marks the conflicting region in the file with lines of angle brackets and equals signs.
- Edit the file so it contains the correct final code and delete the conflict markers.
- After editing, stage the file with git add and finish the merge with git commit.
- Running the tests afterward is wise, because code can merge cleanly and still be wrong.

? What is an API?
? Explain what a REST API is to a beginner.
- An API, or application programming interface, is a defined way for one program to ask another program for data or actions.
- A REST API usually works over HTTP, where each URL represents a resource such as a user or an order.
- Clients use HTTP methods like GET to read data, POST to create it, PUT to update it, and DELETE to remove it.
- Responses are commonly sent as JSON, a text format that most languages can read easily.
- A weather app, for example, might call a weather service's API to fetch the forecast for your city.

? What is the difference between an inner join and a left join in SQL?
? How do SQL joins work?
- A join combines rows from two tables based on a related column, such as a customer ID.
- An inner join returns only the rows that have a match in both tables.
- A left join returns every row from the left table, filling in NULL where the right table has no match.
- Left joins are handy for questions like which customers have never placed an order.
- Joining on indexed columns keeps queries fast on large tables.

? Why should I write unit tests?
? What is a unit test and what makes a good one?
- A unit test checks that one small piece of code, such as a single function, behaves as expected.
- Tests catch mistakes early and give you the confidence to change code without breaking existing behavior.
- A good unit test is fast, independent of other tests, and checks one clear behavior.
- Include edge cases like empty inputs, zero, and very large values.
- In Python, frameworks such as pytest make tests easy to write and run.

? How do exceptions work in Python?
? What is the purpose of try and except?
- Exceptions signal that something went wrong while a program was running, such as dividing by zero or opening a missing file.
- A try block contains code that might fail, and an except block says what to do if a particular error occurs.
- Catch specific exceptions like ValueError rather than catching everything, so real bugs are not hidden.
- A finally block runs whether or not an error occurred, which is useful for cleanup.
- You can raise your own exceptions to report invalid input clearly.

? What is a closure in JavaScript?
? Can you explain closures with a simple example?
- A closure is a function that remembers the variables from the scope where it was created, even after that scope has finished running.
- For example, a makeCounter function can return an inner function that keeps incrementing its own private count variable.
- Closures are a common way to keep data private in JavaScript.
- They also appear whenever you pass a callback that refers to variables from its surrounding code.
- Creating closures inside loops can surprise you if the loop variable is shared, which is one reason let is preferred over var.

? What does async and await do?
? When should I use asynchronous programming?
- Async and await let a program start a slow operation, such as a network request, and do other work while it waits.
- Marking a function async means it returns a promise or coroutine instead of a finished result.
- The await keyword pauses that function until the result is ready without blocking the rest of the program.
- Asynchronous code shines for input and output heavy work like web servers and API calls.
- For CPU-heavy calculations it does not help much, and threads or separate processes are usually better.

? What is a regular expression?
? How do I start learning regex?
- A regular expression is a compact pattern language for finding and matching text.
- For example, the pattern backslash d plus matches one or more digits in a row.
- They are handy for validating formats, extracting pieces of text and search and replace.
- Start with literal characters, character classes, and quantifiers like star, plus and question mark.
- Online testers that highlight matches as you type make learning regex much easier.

? What is JSON?
? Why is JSON used so often for web data?
- JSON, short for JavaScript Object Notation, is a lightweight text format for structured data.
- It represents data as objects with key-value pairs, arrays, strings, numbers, booleans and null.
- It is easy for people to read and for almost every programming language to parse.
- Keys in JSON must be double-quoted strings, and trailing commas are not allowed.
- Web APIs use JSON widely because it maps neatly onto the data structures programs already use.

? What are list comprehensions in Python?
? How do I write a list comprehension?
- A list comprehension builds a new list from an existing sequence in a single readable expression.
- For example, squares = [x * x for x in range(10)] creates the squares of the numbers from 0 to 9.
- You can add a condition, as in [x for x in numbers if x > 0], to keep only positive values.
- They are usually faster and shorter than an equivalent loop with append.
- If a comprehension grows too complicated, a regular loop is often easier to read.

? What is an off-by-one error?
? Why do my loops keep missing the last element?
- An off-by-one error happens when a loop or index runs one step too far or stops one step too early.
- They often come from confusing the length of a list with its last index, which is one less in zero-based languages.
- In Python, range(n) produces 0 up to n minus 1 and does not include n itself.
- Writing tests for the first and last elements catches many of these bugs.
- Iterating directly over items, instead of over index numbers, avoids the problem entirely.

? How do I start debugging a program that gives the wrong answer?
? What are good debugging habits for beginners?
- Start by reproducing the problem reliably with the smallest input that shows the wrong result.
- Read the error message and traceback carefully, because they usually point to the exact line.
- Print or log the values of key variables to find where they stop matching your expectations.
- A debugger lets you pause the program and step through it one line at a time.
- Explaining the code out loud, even to a rubber duck, often reveals the flawed assumption.

? What is a virtual environment in Python?
? Why should I use venv for my Python projects?
- A virtual environment is an isolated folder with its own Python interpreter and installed packages.
- It keeps one project's dependencies from clashing with another project's.
- You can create one with python -m venv .venv and activate it before installing packages.
- Recording dependencies in a requirements file lets others recreate the same environment.
- Virtual environment folders should usually be left out of version control.

? What is the difference between compiled and interpreted languages?
? Is Python compiled or interpreted?
- A compiled language is translated into machine code before it runs, while an interpreted language is executed by another program as it runs.
- C and Rust are typical compiled languages and usually run very fast.
- Python compiles source code to bytecode, which the Python virtual machine then interprets.
- Java compiles to bytecode that a virtual machine runs, often with just-in-time compilation to speed it up.
- In practice the line is blurry, and many modern languages mix both approaches.

? What is object-oriented programming?
? Can you explain classes and objects?
- Object-oriented programming organizes code around objects, which bundle data together with the functions that act on that data.
- A class is a blueprint, and an object is one instance built from it, like a particular car built from a design.
- Encapsulation hides internal details behind a clear set of methods.
- Inheritance lets a class reuse and extend the behavior of another class.
- Used carefully, these ideas make large programs easier to organize, though not every problem needs them.

? What are environment variables and why do apps use them?
? Where should I keep API keys in my code?
- Environment variables are named settings provided by the operating system to a running program.
- They are a common place for configuration such as database addresses and API keys.
- Keeping secrets in environment variables instead of source code helps avoid leaking them in a public repository.
- In Python you can read one with os.environ.get and give a default value if it is missing.
- Many projects load them from a local .env file that is excluded from version control.

? What is caching?
? How does caching make software faster?
- Caching stores the result of an expensive operation so that later requests can reuse it instead of recomputing it.
- Web browsers cache images and scripts so that pages load faster on a second visit.
- The hard part is invalidation: deciding when cached data is out of date and must be refreshed.
- Common policies evict the least recently used items when the cache is full.
- In Python, functools.lru_cache adds simple caching to a function with one decorator.

? What does binary search do?
? How does binary search find an item so quickly?
- Binary search finds an item in a sorted list by repeatedly checking the middle element and discarding the half that cannot contain the target.
- Each step halves the search range, so a list of a million items needs only about 20 comparisons.
- It only works when the data is sorted.
- Off-by-one mistakes in the boundaries are the most common bug when writing it by hand.
- Python's bisect module provides a tested implementation.

@geography
? Why is the Dead Sea so salty?
? Why can people float so easily in the Dead Sea?
- The Dead Sea has no outlet, so the water that flows in can only leave by evaporating, which leaves the salt behind.
- Its water is roughly nine to ten times saltier than the ocean.
- All that dissolved salt makes the water much denser than a human body, so swimmers float very easily.
- Its shore lies more than 400 meters below sea level, the lowest land surface on Earth.
- The sea has been shrinking for decades because much of the water from the Jordan River is diverted before it arrives.

? What is the largest desert in the world?
? Is the Sahara the biggest desert on Earth?
- If you count any region with very little precipitation, the largest desert is Antarctica.
- The Sahara is the largest hot desert, covering much of North Africa.
- A desert is defined by low precipitation, not by heat or sand.
- The Arctic is the second largest cold desert.
- Only a fraction of the Sahara is sand dunes; much of it is rocky plateau and gravel plains.

? Why does the Amazon rainforest matter so much?
? What makes the Amazon river basin special?
- The Amazon is the largest tropical rainforest on Earth and is home to an enormous share of the world's known species.
- Its trees store vast amounts of carbon, which helps regulate the global climate.
- The forest recycles moisture into rain that falls far away across South America.
- The Amazon River carries more water than any other river in the world.
- Deforestation for cattle ranching and farming is the biggest threat to the region.

? How are mountains formed?
? What causes mountain ranges like the Himalayas to rise?
- Most great mountain ranges form where tectonic plates collide and the crust crumples and thickens.
- The Himalayas are rising because the Indian plate is still pushing into the Eurasian plate.
- Volcanic mountains such as Mount Fuji build up from layers of erupted lava and ash.
- Some ranges form where blocks of crust are pulled apart and tilt along faults.
- Erosion by rivers and glaciers constantly wears mountains down even as they are pushed up.

? What is the difference between weather and climate?
? Why do people say weather is not the same as climate?
- Weather is the state of the atmosphere over hours or days, while climate is the average pattern over decades.
- A single cold week does not say much about the climate, in the same way one bad day does not define a year.
- Climate is often described with 30-year averages of temperature and rainfall.
- Scientists look at long-term trends in these averages to study climate change.
- A short saying sums it up: climate is what you expect, weather is what you get.

? Why are there time zones?
? How were the world's time zones decided?
- Time zones exist so that clocks roughly match the position of the sun, with noon near the time the sun is highest.
- The Earth turns 15 degrees every hour, which is why zones are roughly 15 degrees of longitude wide.
- Railways pushed for standard time in the nineteenth century because every town keeping its own local time made timetables chaotic.
- In practice, zone borders follow national and regional boundaries rather than straight lines.
- Some countries, such as India, use a half-hour offset, and China uses a single time zone despite spanning much more.

? What are the Great Lakes?
? Tell me about the Great Lakes of North America.
- The Great Lakes are five connected freshwater lakes on the border of the United States and Canada: Superior, Michigan, Huron, Erie and Ontario.
- Together the Great Lakes hold about a fifth of the world's surface fresh water.
- Lake Superior is the largest by area and the deepest of the five.
- Lake Michigan is the only one entirely within the United States.
- The lakes connect to the Atlantic Ocean through the St. Lawrence River, making them a major shipping route.

? What is a fjord?
? Which countries are famous for fjords?
- A fjord is a long, narrow and deep inlet of the sea with steep sides, carved by glaciers.
- During ice ages, glaciers cut deep valleys that the sea flooded when the ice melted.
- Norway is the most famous fjord country, but New Zealand, Chile, Canada and Greenland have them too.
- Fjords are often deeper inland than at their mouths, where a ridge of glacial debris forms a shallow sill.
- The sheltered waters of fjords have long been used as natural harbors.

? What are monsoons?
? Why does South Asia get such heavy seasonal rain?
- A monsoon is a seasonal shift in wind direction that brings a distinct wet season and dry season.
- In summer the land heats up faster than the ocean, drawing moist air inland, where it rises and falls as heavy rain.
- In South Asia, the summer monsoon typically arrives in June and delivers most of the year's rainfall.
- Farmers depend on it for crops, but an unusually strong monsoon can also cause severe flooding.
- Monsoon systems also affect West Africa, northern Australia and parts of the Americas.

@science
? Why is the sky blue?
? What makes the daytime sky look blue instead of white?
- Sunlight contains all colors, and the molecules in the air scatter short blue wavelengths much more strongly than red ones.
- Scattering of light by particles much smaller than its wavelength is called Rayleigh scattering.
- The scattered blue light reaches our eyes from every direction, so the whole sky looks blue.
- At sunset, light travels through much more air, most of the blue is scattered away, and reds and oranges remain.
- Violet is scattered even more than blue, but our eyes are less sensitive to it.

? How does photosynthesis work?
? Explain photosynthesis in simple terms.
- Photosynthesis is the process by which plants use sunlight to turn carbon dioxide and water into sugar and oxygen.
- It happens mainly in the leaves, inside structures called chloroplasts that contain the green pigment chlorophyll.
- The sugar feeds the plant and provides energy for growth.
- The oxygen released as a by-product is what most animals, including us, breathe.
- Nearly all food chains on Earth ultimately depend on this process.

? Why does the moon have phases?
? What causes the moon to look different throughout the month?
- The moon does not make its own light; we see the half lit by the sun, and how much of that half faces us changes as it orbits Earth.
- At new moon it sits roughly between Earth and the sun, so the lit side faces away from us.
- At full moon it is on the opposite side of Earth from the sun, and we see the whole lit face.
- A complete cycle of phases takes about 29.5 days.
- The phases are not caused by Earth's shadow; that only happens during a lunar eclipse.

? What causes ocean tides?
? Why are there two high tides every day?
- Tides are caused mainly by the moon's gravity pulling on Earth's oceans, with a smaller contribution from the sun.
- The water bulges toward the moon on one side and also away from it on the far side.
- As Earth rotates through both bulges, most coasts get two high tides and two low tides each day.
- When the sun and moon line up at new and full moon, their pulls combine to make larger spring tides.
- The shape of the coastline strongly affects how big the tides are in a particular place.

? What are the states of matter?
? What is the difference between a solid, a liquid and a gas?
- The three familiar states of matter are solid, liquid and gas, and they differ in how tightly particles are held together.
- In a solid the particles vibrate in fixed positions, so it keeps its shape.
- In a liquid the particles slide past each other, so it flows but keeps its volume.
- In a gas the particles move freely and spread out to fill any container.
- Plasma, an ionized gas found in stars and lightning, is often counted as a fourth state.

? How do magnets work?
? Why do magnets attract some metals but not others?
- Magnetism comes from the motion and spin of electrons, and in a magnet many tiny atomic magnets line up in the same direction.
- Iron, nickel and cobalt are strongly attracted because their atoms can align into magnetic regions called domains.
- Most other metals, such as aluminum and copper, are only very weakly affected.
- Every magnet has a north and a south pole, and opposite poles attract while like poles repel.
- Earth itself behaves like a giant magnet, which is why a compass needle points roughly north.

? Why do we have seasons?
? Are seasons caused by Earth being closer to the sun?
- Seasons are caused by the tilt of Earth's axis, about 23.5 degrees, not by changes in our distance from the sun.
- When your hemisphere tilts toward the sun, sunlight hits it more directly and days are longer, so it is summer.
- Earth is actually closest to the sun in early January, during winter in the Northern Hemisphere.
- The two hemispheres have opposite seasons at the same time.
- Near the equator the tilt matters less, so seasons are marked more by rainfall than by temperature.

? What is DNA?
? How does DNA store information?
- DNA is the molecule that carries the genetic instructions living things use to grow, function and reproduce.
- It is shaped like a twisted ladder, the famous double helix.
- The rungs are pairs of four chemical bases, adenine, thymine, guanine and cytosine, and their order spells out the instructions.
- A section of DNA that codes for a particular protein is called a gene.
- Before a cell divides, it copies its DNA so each new cell gets a full set.

? How do volcanoes erupt?
? What happens inside a volcano before an eruption?
- Volcanoes erupt when molten rock called magma rises from deep underground and pressure builds until it escapes at the surface.
- Gases dissolved in the magma expand as it rises, a bit like the bubbles in a shaken soda.
- Runny magma tends to produce gentle lava flows, while thick, sticky magma traps gas and leads to explosive eruptions.
- Many volcanoes sit along the edges of tectonic plates, such as around the Pacific Ring of Fire.
- Scientists watch for small earthquakes, ground swelling and gas emissions as warning signs.

? Why does ice float on water?
? Why doesn't ice sink in a glass of water?
- Ice floats because it is less dense than liquid water, which is unusual, since most substances are denser as solids.
- When water freezes, hydrogen bonds lock the molecules into an open hexagonal structure with more space between them.
- Ice is roughly nine percent less dense than liquid water, which is why about a tenth of an iceberg shows above the surface.
- Floating ice insulates the water below, so lakes freeze from the top down and fish can survive winter.

? What is the speed of light?
? How fast does light travel?
- In a vacuum, light travels at about 299,792 kilometers per second.
- Light is fast enough to circle the Earth about seven and a half times in one second.
- Sunlight takes a little over eight minutes to reach Earth.
- Light slows down when it passes through materials like water or glass, which is what causes refraction.
- According to relativity, nothing carrying information can travel faster than light in a vacuum.

? How do rainbows form?
? Why do rainbows appear after a rain shower?
- A rainbow forms when sunlight enters raindrops, bends, reflects off the back of the drop, and bends again as it leaves.
- Each color bends by a slightly different amount, so white light spreads into a band of colors.
- You can only see a rainbow with the sun behind you and rain in front of you.
- The main bow appears about 42 degrees from the point directly opposite the sun.
- A fainter second rainbow with reversed colors sometimes appears outside the first.

? How do fireflies make light?
? Why do fireflies glow?
- Fireflies glow through a chemical reaction called bioluminescence, in which a molecule called luciferin reacts with oxygen with the help of an enzyme.
- The reaction produces light with very little heat, so it is sometimes called cold light.
- Each species has its own flash pattern, which males and females use to find each other.
- The light organ sits in the lower part of the abdomen.
- Light pollution can confuse fireflies and make it harder for them to find mates.

? What is the difference between a virus and a bacterium?
? Are bacteria and viruses the same thing?
- Bacteria are single-celled living organisms that can reproduce on their own, while viruses are much smaller and can only multiply inside a host's cells.
- Many bacteria are harmless or helpful, such as those that help with digestion.
- Antibiotics can treat many bacterial infections but do not work against viruses.
- Vaccines help protect against many illnesses caused by both viruses and bacteria.
- Viruses are made of genetic material wrapped in a protein coat, sometimes with an outer envelope.

? What is gravity?
? Why do things fall down instead of up?
- Gravity is the attraction between objects that have mass, and it is what pulls things toward the Earth.
- The more massive an object is, the stronger its pull, which is why Earth's gravity dominates everyday life.
- Gravity weakens with distance, falling off with the square of the distance between objects.
- It keeps the moon in orbit around Earth and the planets in orbit around the sun.
- Einstein's general relativity describes gravity as the bending of space and time by mass and energy.

? Why do leaves change color in autumn?
? What makes tree leaves turn red and yellow in the fall?
- In autumn, shorter days and cooler nights cause trees to stop making chlorophyll, the green pigment in leaves.
- As the green fades, yellow and orange pigments called carotenoids, which were there all along, become visible.
- Red and purple colors come from anthocyanins, which some trees produce in autumn.
- Sunny days and cool but not freezing nights tend to give the most vivid reds.
- The tree then seals off each leaf stem, and the leaf falls.

@astronomy
? How far away is the moon?
? How long would it take to travel to the moon?
- The moon is about 384,000 kilometers from Earth on average.
- Its distance varies by tens of thousands of kilometers because its orbit is slightly elliptical.
- The Apollo astronauts took about three days to reach it.
- Light from the moon reaches us in a little over one second.
- The moon is also drifting away from Earth by about 3.8 centimeters every year.

? What is a black hole?
? How do black holes form?
- A black hole is a region of space where gravity is so strong that nothing, not even light, can escape once it crosses the boundary called the event horizon.
- Many black holes form when very massive stars run out of fuel and their cores collapse.
- Supermassive black holes, millions or billions of times the mass of the sun, sit at the centers of most large galaxies.
- Astronomers detect black holes by their effects on nearby stars and gas and by the gravitational waves from their collisions.
- In 2019 astronomers released the first image of the shadow of a black hole, in the galaxy M87.

? Why is Mars red?
? What gives Mars its color?
- Mars looks red because its surface dust is rich in iron oxide, which is essentially rust.
- Fine dust blown around the planet coats rocks and tints the sky a butterscotch color.
- Mars is about half the diameter of Earth and has a thin atmosphere made mostly of carbon dioxide.
- It has the largest volcano in the solar system, Olympus Mons.
- Several rovers have explored its surface searching for signs of ancient water.

? What is a shooting star?
? When is the best time to see meteors?
- A shooting star is not a star at all but a small piece of space rock burning up as it enters Earth's atmosphere.
- Most meteors are no bigger than a grain of sand.
- Meteor showers happen when Earth passes through trails of debris left by comets.
- The Perseids in August and the Geminids in December are two of the most reliable showers.
- For the best view, go somewhere dark, let your eyes adjust for 20 minutes, and look at a wide patch of sky.

? How many planets are in the solar system?
? Why is Pluto not a planet anymore?
- There are eight planets in the solar system: Mercury, Venus, Earth, Mars, Jupiter, Saturn, Uranus and Neptune.
- In 2006 the International Astronomical Union reclassified Pluto as a dwarf planet.
- Under the definition adopted then, a planet must orbit the sun, be round, and have cleared its orbit of other debris.
- Pluto shares its region with many other icy bodies in the Kuiper belt, so it does not meet the last condition.
- Other dwarf planets include Eris and Ceres.

@nature
? What is a Komodo dragon?
? Are Komodo dragons really dragons?
- The Komodo dragon is a real animal, the largest living lizard, found on a few Indonesian islands including Komodo.
- Adults can grow to about three meters long and weigh more than 70 kilograms.
- They are powerful predators that eat deer, pigs and carrion.
- A Komodo dragon's bite delivers venom that helps bring down large prey.
- The species is endangered, and much of its range is protected within Komodo National Park.

? How do bees make honey?
? Why do bees make honey?
- Bees make honey from flower nectar, which they collect, store in their honey stomach, and pass between workers in the hive.
- Enzymes from the bees break down the sugars in the nectar.
- The bees fan their wings over the honeycomb to evaporate water until the honey is thick.
- They seal each finished cell with wax and eat the honey during winter when flowers are scarce.
- A single bee produces only a small fraction of a teaspoon of honey in its lifetime.

? How do owls hunt at night?
? Why are owls such good night hunters?
- Owls hunt at night using extremely sensitive hearing and large eyes adapted to low light.
- In some species the ear openings sit at different heights, which helps them pinpoint a sound up and down as well as left and right.
- Soft, fringed feathers make their flight almost silent, so prey does not hear them coming.
- Owls cannot move their eyes in their sockets, so they turn their heads, up to about 270 degrees.
- Many owls swallow small prey whole and later cough up pellets of fur and bone.

? Why do cats purr?
? Do cats only purr when they are happy?
- Cats often purr when they are relaxed and content, but they also purr when stressed, injured or giving birth.
- Kittens purr while nursing, which may help the mother and kittens stay in contact.
- The sound comes from rapid twitching of the muscles around the voice box as the cat breathes in and out.
- Some researchers think purring may help with healing, though that idea is still being studied.
- Watch the cat's body language to tell which kind of purr you are hearing.

? How do birds migrate so far without getting lost?
? How do migratory birds find their way?
- Migratory birds navigate using several cues, including the position of the sun, star patterns, and Earth's magnetic field.
- Many species also follow landmarks like coastlines, rivers and mountain ranges.
- Young birds of some species migrate alone on their first trip, guided largely by instinct.
- The Arctic tern has one of the longest migrations of any animal, flying between the Arctic and Antarctic each year.
- Birds put on fat before migrating to fuel the long flights.

? How do whales communicate?
? Why do humpback whales sing?
- Whales communicate with sound, which travels much farther through water than light does.
- Male humpback whales sing long, complex songs, mostly in breeding areas, which may help attract mates.
- All the males in a population tend to sing a similar song, and the song slowly changes over the seasons.
- Toothed whales, such as dolphins, use clicks for echolocation to find food.
- Ship noise can interfere with whale communication over long distances.

@writing
? How do I write a strong opening sentence for an essay?
? What is a good way to start an essay?
- A strong opening sentence gives the reader a reason to keep reading, with a surprising fact, a sharp question, or a concrete scene.
- Avoid broad openings such as since the dawn of time, which say little.
- Make sure the opening connects directly to your main argument.
- Many writers draft the introduction last, once they know what the essay actually says.
- Read the first paragraph aloud to check that it sounds natural and flows into your thesis.

? How can I make my writing more concise?
? What are quick ways to cut wordiness from a report?
- Cut words that add no meaning, such as really, very and basically, and replace weak verb phrases with single strong verbs.
- Write make a decision as decide, and in order to as to.
- Prefer active voice when the person doing the action matters.
- Delete sentences that repeat what the previous sentence already said.
- Reading the draft aloud helps you hear where sentences drag.

? What is passive voice and should I avoid it?
? How do I change a passive sentence into an active one?
- In passive voice the subject receives the action, as in the report was written by Maria, while active voice puts the doer first: Maria wrote the report.
- Active voice is usually clearer and shorter, so it is a good default.
- Passive voice is useful when the doer is unknown or unimportant, such as the bridge was built in 1932.
- To convert a sentence, find who performed the action and make that person or thing the subject.
- Scientific writing traditionally used more passive voice, though many journals now encourage active voice.

? How should I write a cover letter?
? What should a good cover letter include?
- A good cover letter explains why you want this particular job and how your experience fits what the employer needs.
- Open with the role you are applying for and a sentence that shows genuine interest in the organization.
- Use one or two short paragraphs to connect specific achievements to the job requirements.
- Keep it under one page and avoid repeating your resume line by line.
- Close by thanking the reader and saying you would welcome the chance to talk further.

? How do I write a professional email to a professor?
? What is the right way to email a teacher asking for an extension?
- Use a clear subject line, a polite greeting with their title, and get to the point in the first two sentences.
- Mention which course you are in, since instructors teach many students.
- Explain your request briefly and honestly, and propose a specific new deadline.
- Keep the tone respectful and avoid long apologies or excuses.
- Proofread before sending and sign off with your full name.

? What is a thesis statement?
? How do I write a good thesis statement?
- A thesis statement is one or two sentences that state the main argument of your essay.
- It should be specific and arguable, something a reasonable person could disagree with.
- It usually appears at the end of the introduction.
- A weak thesis announces a topic; a strong one takes a position on it.
- Revise the thesis after drafting, since your argument often sharpens as you write.

? When should I use a semicolon?
? How do semicolons work?
- Use a semicolon to join two complete sentences that are closely related, as in it was raining; we stayed inside.
- A semicolon can also separate items in a list when the items already contain commas.
- Do not use a semicolon before a fragment that cannot stand alone.
- When joining sentences with words like however, put a semicolon before the word and a comma after it.
- If in doubt, two separate sentences are always correct.

? How do I proofread my own writing effectively?
? What's the best way to catch typos before submitting?
- Take a break before proofreading so you see the text with fresh eyes.
- Read the text aloud slowly, which forces you to notice every word.
- Change the font or print the document, since a new layout makes errors stand out.
- Check one type of error at a time, such as spelling first and then punctuation.
- Keep a personal list of mistakes you tend to make and search for them specifically.

? How do I structure a paragraph?
? What makes a well-organized paragraph?
- A well-organized paragraph usually starts with a topic sentence that states its main point.
- The following sentences support that point with evidence, examples or explanation.
- Every sentence should relate to the topic sentence; move unrelated ideas to a new paragraph.
- A closing sentence can sum up the point or lead into the next paragraph.
- Transition words such as however, for example and as a result help readers follow the logic.

? How can I overcome writer's block?
? I keep staring at a blank page. How do I get started writing?
- Lower the stakes by writing a deliberately rough first draft that nobody else will see.
- Set a timer for ten minutes and keep writing without stopping to edit.
- Start with the section that feels easiest rather than the introduction.
- Talking your ideas through with a friend, or recording yourself, can loosen things up.
- A short walk or a change of place often helps more than forcing it.

@creative-writing
? Give me tips for writing a short story with a twist ending.
? How do I write a good plot twist?
- A good twist is surprising but, in hindsight, feels inevitable because the clues were there all along.
- Plant small details early that readers notice but do not interpret correctly.
- Play fair: do not hide information the point-of-view character would obviously know.
- Decide on the ending first and then write toward it.
- Test it on a reader; if they see it coming too soon, make the clues subtler.

? How do I write realistic dialogue?
? Why does the dialogue in my stories sound stiff?
- Realistic dialogue sounds like speech with the boring parts cut out.
- Listen to how people actually talk: they interrupt, leave sentences unfinished and avoid saying exactly what they mean.
- Give each character a recognizable voice through word choice and rhythm.
- Use simple tags like said and let the words carry the emotion.
- Read it aloud; any line you would stumble over needs rewriting.

? How do I create a believable character for a novel?
? What makes fictional characters feel real?
- Believable characters want something specific and face obstacles in getting it.
- Give them contradictions, such as a brave firefighter who is terrified of public speaking.
- Show their personality through choices and actions rather than long descriptions.
- Know their history even if most of it never appears on the page.
- Let them change, at least a little, by the end of the story.

? Can you suggest some writing prompts for a creative writing class?
? What are good prompts to practice short fiction?
- Here are a few realistic prompts: a letter that arrives forty years late, the last day before a family bakery closes, and two strangers stuck in an elevator for an hour.
- You could also try a story told entirely through text messages between siblings.
- Another option is to describe an ordinary morning from the point of view of a bus driver.
- A quieter prompt: someone returns to their childhood home and finds it repainted a different color.
- Ask students to limit themselves to 500 words so they focus on one strong moment.

! whole
? Summarize the plot of Jack and the Beanstalk.
? What happens in the fairy tale Jack and the Beanstalk?
- In the English folk tale, a poor boy named Jack trades the family cow for a handful of magic beans, and his angry mother throws them out of the window.
- Overnight the beans grow into a giant beanstalk reaching up to the clouds.
- Jack climbs it and finds a castle belonging to a giant, from whom he takes gold, a hen that lays golden eggs, and a singing harp.
- When the giant chases him down, Jack chops the beanstalk down and the giant falls.
- Jack and his mother live comfortably ever after.

! whole
? Briefly summarize the story of Cinderella.
? What is the basic plot of Cinderella?
- Cinderella is a kind young woman mistreated by her stepmother and stepsisters, who make her do all the housework.
- When the prince holds a royal ball, her fairy godmother magically gives her a gown, glass slippers and a carriage made from a pumpkin.
- She must leave before midnight, when the spell ends, and loses a glass slipper on the palace steps.
- The prince searches the kingdom for the woman whose foot fits the slipper.
- He finds Cinderella, and the two marry.

! whole
? What is the moral of the tortoise and the hare?
? Tell me the fable of the tortoise and the hare.
- In Aesop's fable, a boastful hare challenges a slow tortoise to a race.
- Confident of winning, the hare stops to nap partway through the course.
- The tortoise keeps plodding steadily and crosses the finish line first.
- The usual moral is that slow and steady wins the race.
- Many read it as a lesson about overconfidence as much as about persistence.

! whole
? What happens in Hansel and Gretel?
? Summarize the Grimm fairy tale Hansel and Gretel.
- Hansel and Gretel are siblings abandoned in the forest by their parents during a famine.
- Hansel first leaves a trail of pebbles to find the way home, but a second trail of breadcrumbs is eaten by birds.
- The children find a house made of bread, cake and sugar, owned by a witch who plans to eat them.
- Gretel tricks the witch into the oven, and the children escape with her treasure.
- They find their way home, where they are reunited with their father.

! whole
? Write a short, realistic story about a retired teacher who starts a community garden.
? Tell me a realistic short story about neighbors building a garden together.
- After forty years of teaching chemistry, Mrs. Alvarez found the empty lot on Fourth Street harder to ignore than any lab mess.
- She knocked on doors with a clipboard, and by April twelve neighbors had signed up, most of whom had never spoken to one another.
- The first summer produced lopsided tomatoes, an argument about compost, and more zucchini than anyone could eat.
- By autumn, the garden had a bench, a shared tool shed, and a weekly potluck that nobody wanted to miss.

! whole
? Write a short story about a nervous student on the first day at a new school.
? Can you write a brief realistic story about starting at a new school?
- Priya rehearsed her locker combination the whole bus ride, certain she would forget it the moment anyone watched.
- In homeroom she sat in the only empty seat, next to a boy drawing maps of cities that did not exist.
- He asked her which city she would design, and by lunch they had argued happily about subway lines.
- On the bus home she realized she had not thought about her locker once all afternoon.

! whole
? Write a brief story about a delivery driver during a snowstorm.
? Tell me a short, down-to-earth story set during a snowstorm.
- Marcus had eleven stops left when the snow turned the highway into one long white blur.
- At a farmhouse at the end of a long driveway, an elderly man insisted he come in for coffee while the plows caught up.
- They talked about old trucks for twenty minutes, and Marcus left with a thermos and directions for a shortcut.
- He finished the route two hours late, but it was the only delivery he remembered that winter.

! whole
? Write a short story about a lost umbrella.
? Give me a small everyday story involving an umbrella.
- The blue umbrella was left on the 8:15 train, where a conductor hung it in the lost-property cupboard with two hundred others.
- Its owner, a nurse coming off a night shift, called three times to ask about it.
- When she finally came to collect it, she explained it had belonged to her mother.
- The conductor, who had almost thrown it out, walked her to the door and held it over her as she stepped into the rain.

@health-habits
? How much water should I drink each day?
? Is it true that everyone needs eight glasses of water a day?
- There is no single rule for everyone; needs depend on body size, activity, climate and diet.
- Many health authorities suggest roughly two to three liters of total fluid a day for most adults, including water from food and other drinks.
- Thirst is a reasonable guide for most healthy people, and pale yellow urine usually means you are drinking enough.
- You need more during hot weather, exercise or illness with fever.
- People with certain heart or kidney conditions may be told to limit fluids, so follow a clinician's advice if that applies.

? How can I improve my sleep?
? What habits help with getting better sleep at night?
- Keep a consistent sleep and wake time, even on weekends, to steady your body clock.
- Make the bedroom dark, quiet and cool.
- Limit caffeine after early afternoon and avoid heavy meals right before bed.
- Dim screens and bright lights in the hour before sleep.
- If you cannot fall asleep after about 20 minutes, get up and do something quiet until you feel sleepy.
- Persistent trouble sleeping is worth discussing with a doctor.

? How can I build a habit of exercising regularly?
? I keep quitting my workout routine. How do I stick with it?
- Start smaller than you think you need to, such as a ten-minute walk after dinner, so the habit is easy to keep.
- Schedule exercise at a specific time and treat it like an appointment.
- Choose activities you actually enjoy, because enjoyment predicts consistency better than willpower.
- Track your sessions on a calendar; a visible streak is motivating.
- Exercising with a friend adds accountability.

? How can I reduce eye strain from working on a computer?
? What is the 20-20-20 rule for screens?
- A common tip is the 20-20-20 rule: every 20 minutes, look at something about 20 feet away for 20 seconds.
- Position the screen about an arm's length away and slightly below eye level.
- Reduce glare by adjusting lighting and screen brightness to match the room.
- Remember to blink, since people blink less when staring at screens, which dries the eyes.
- If symptoms persist, an eye exam can check whether you need glasses for computer work.

? Why is handwashing so important?
? How long should I wash my hands?
- Washing hands with soap is one of the simplest ways to prevent the spread of many infections.
- Scrub all surfaces, including the backs of the hands, between the fingers and under the nails, for at least 20 seconds.
- Soap breaks up oils and dirt that carry germs, and rinsing washes them away.
- Wash before eating or preparing food, after using the toilet, and after coughing or sneezing.
- When soap is not available, an alcohol-based hand sanitizer is a good backup.

? How can I manage everyday stress?
? What are simple ways to feel less stressed at work?
- Regular physical activity is one of the most effective everyday stress relievers.
- Slow breathing, such as breathing in for four counts and out for six, can calm the body in a few minutes.
- Break big tasks into smaller steps and focus on the next concrete action.
- Protect time for sleep, meals and people you enjoy being with.
- If stress feels overwhelming or lasts for weeks, talking to a professional can help.

? Do I really need sunscreen on cloudy days?
? How should I use sunscreen properly?
- Yes, a large share of ultraviolet radiation passes through clouds, so sunscreen is still useful on overcast days.
- Choose a broad-spectrum sunscreen with SPF 30 or higher.
- Apply it generously about 15 minutes before going outside, and reapply every two hours or after swimming.
- Most people use too little; a full-body application for an adult is roughly a shot-glass worth.
- Hats, shade and clothing add protection, especially around midday.

? How can I improve my posture while sitting at a desk?
? What is a good desk setup to avoid back pain?
- Sit with your feet flat on the floor, your back supported, and your screen at about eye level.
- Your elbows should rest near a right angle with your shoulders relaxed.
- Keep the keyboard and mouse close so you do not reach forward.
- The best posture is the next posture: stand up or change position at least every 30 to 60 minutes.
- A small cushion or rolled towel can support the curve of the lower back.

? What are some healthy snacks for work?
? Can you suggest snacks that keep me full between meals?
- Snacks that combine protein or fiber with some healthy fat tend to keep you full longer.
- Good options include a handful of nuts, plain yogurt with fruit, hummus with carrot sticks, or an apple with peanut butter.
- Hard-boiled eggs and cheese with whole grain crackers are easy to pack.
- Preparing snacks in advance makes it less likely you will reach for vending machine sweets.
- Drinking water also helps, since thirst is sometimes mistaken for hunger.

@fitness
? How should I start running as a complete beginner?
? What's a good plan to go from the couch to running 5K?
- Start with run-walk intervals, such as one minute of easy running followed by two minutes of walking, repeated for 20 to 30 minutes.
- Run three times a week with rest days in between so your body can adapt.
- Gradually lengthen the running intervals over eight to ten weeks.
- Keep the pace easy enough that you could hold a conversation.
- Good shoes fitted at a running store can make the process more comfortable.

? Should I stretch before or after exercise?
? What kind of stretching is best before a workout?
- Before exercise, a dynamic warm-up such as leg swings, walking lunges and arm circles prepares muscles better than long static stretches.
- Static stretching, holding a stretch for 20 to 30 seconds, fits better after exercise or in a separate flexibility session.
- A warm-up of five to ten minutes raises your heart rate and body temperature.
- Stretching should feel like gentle tension, never sharp pain.
- Consistency matters more than timing if your goal is better flexibility.

? How many days a week should I do strength training?
? Is lifting weights twice a week enough?
- Many health guidelines recommend muscle-strengthening activity on at least two days a week, covering all major muscle groups.
- Two full-body sessions can produce real gains for beginners.
- Give a muscle group about 48 hours to recover before training it hard again.
- Focus on good form with manageable weights before adding load.
- Bodyweight exercises like squats, push-ups and lunges count as strength training too.

? What is a good warm-up before playing football?
? How do I warm up properly before a sports match?
- A good warm-up starts with light jogging for a few minutes to raise your heart rate.
- Follow it with dynamic movements such as high knees, butt kicks, side shuffles and leg swings.
- Add a few short accelerations that build up to near full speed.
- Finish with sport-specific drills like passing and quick changes of direction.
- The whole routine should take about 10 to 15 minutes and leave you warm but not tired.

@history
? Why did the Roman Empire fall?
? What were the main causes of the fall of the Western Roman Empire?
- Historians point to several causes working together: political instability, economic trouble, overreliance on mercenaries, and pressure from migrating peoples.
- The empire was split into eastern and western halves, and the west was weaker and poorer.
- Frequent civil wars and short-lived emperors drained resources.
- The traditional end date is 476, when the last western emperor, Romulus Augustulus, was deposed.
- The eastern half, known as the Byzantine Empire, lasted almost another thousand years.

? What was the Industrial Revolution?
? Where did the Industrial Revolution begin and why?
- The Industrial Revolution was the shift from hand production to machines and factories, beginning in Britain in the late eighteenth century.
- Britain had coal, iron, a growing population, capital to invest, and a large trading network.
- Textile manufacturing was one of the first industries to be mechanized.
- Steam engines powered factories, trains and ships.
- It raised productivity enormously but also brought crowded cities and harsh working conditions.

? Why was the printing press important?
? How did Gutenberg's printing press change the world?
- Johannes Gutenberg's printing press with movable metal type, developed around 1450, made books far cheaper and faster to produce.
- Ideas could spread widely and quickly for the first time in Europe.
- It helped fuel the Reformation, the Scientific Revolution and rising literacy.
- Printed texts were more standardized than hand-copied manuscripts, which reduced copying errors.
- Movable type had been invented earlier in East Asia, but Gutenberg's system suited alphabetic scripts especially well.

? What was the Silk Road?
? Why was the Silk Road important in history?
- The Silk Road was a network of trade routes connecting China with Central Asia, the Middle East and Europe.
- Merchants traded silk, spices, paper, horses, glass and much more along it.
- Ideas, religions and technologies also traveled the routes, including Buddhism and papermaking.
- Few traders traveled the whole way; goods usually passed through many hands.
- Sea routes gradually became more important than the overland routes.

? What was the Renaissance?
? Why did the Renaissance start in Italy?
- The Renaissance was a period of renewed interest in classical learning, art and science in Europe, roughly from the fourteenth to the seventeenth century.
- It began in Italian city-states such as Florence, which were wealthy from trade and banking.
- Rich patrons like the Medici family paid for art, architecture and scholarship.
- Artists such as Leonardo da Vinci and Michelangelo developed realistic perspective and anatomy.
- Humanist scholars studied ancient Greek and Roman texts and emphasized human potential.

? What was the Cold War?
? Why was it called the Cold War?
- The Cold War was a long rivalry between the United States and the Soviet Union from the late 1940s until 1991.
- It was called cold because the two superpowers never fought each other directly in a full-scale war.
- The superpowers competed through an arms race, a space race, alliances and wars fought by proxies.
- The fear of nuclear war shaped politics around the world.
- It ended with the collapse of the Soviet Union in 1991.

@home
? How do I unclog a kitchen sink without chemicals?
? My sink drains slowly. What can I try first?
- Start with boiling water poured slowly down the drain, which can melt grease buildup.
- A cup-style plunger often clears a blockage; cover the overflow hole or second drain to get good suction.
- Baking soda followed by vinegar can loosen mild clogs, followed by hot water after fifteen minutes.
- The U-shaped trap under the sink can be unscrewed and cleaned out over a bucket.
- Avoid pouring cooking grease down the drain, since it hardens as it cools.

? How do I remove a red wine stain from carpet?
? What is the best way to clean a fresh wine spill?
- Act fast and blot, do not rub, with a clean cloth to soak up as much wine as possible.
- Pour a little cold water on the stain and keep blotting.
- A mixture of dish soap, white vinegar and warm water can lift what remains.
- For stubborn stains on light carpet, hydrogen peroxide can help, but test it on a hidden spot first.
- Avoid hot water, which can set the stain.

? How can I lower my electricity bill?
? What are easy ways to use less energy at home?
- Switching to LED bulbs uses far less electricity than old incandescent bulbs.
- Heating and cooling are usually the biggest costs, so adjusting the thermostat a degree or two makes a noticeable difference.
- Seal drafts around windows and doors with weatherstripping.
- Wash clothes in cold water and air-dry them when you can.
- Unplug chargers and switch off devices on standby, or use a power strip.

? How do I descale a teapot or kettle?
? How do I get rid of limescale in my kettle?
- Fill the kettle about halfway with a mix of equal parts white vinegar and water, bring it to a boil, and let it sit for an hour.
- For a teapot with tea stains, soak it in hot water with a spoonful of baking soda, then scrub gently.
- Citric acid or lemon juice works too and leaves less smell than vinegar.
- Rinse thoroughly and boil a round of plain water before using it again.
- In hard water areas, descaling once a month keeps scale from building up.

? How often should I clean my refrigerator?
? What's the best way to clean out the fridge?
- Wipe up spills as they happen, check for expired food weekly, and give the fridge a full clean every three or four months.
- Empty the shelves and wash removable parts with warm soapy water.
- Wipe the inside with a solution of baking soda and water, which cleans without leaving harsh smells.
- An open box of baking soda on a shelf helps absorb odors.
- Vacuuming the coils at the back or bottom keeps the fridge running efficiently.

? How do I hang a picture on drywall securely?
? What do I need to hang a heavy mirror on the wall?
- For light frames, a nail or picture hook driven at an angle into drywall is usually enough.
- For heavier items, screw into a wall stud or use drywall anchors rated for the weight.
- A stud finder helps locate the wooden studs behind the drywall.
- Use a level and a pencil mark so the picture hangs straight.
- Heavy mirrors often come with a weight rating; choose hardware rated for at least twice that weight.

? How do I keep a house plant alive?
? Why do my indoor plants keep dying?
- The most common cause of houseplant death is overwatering, which suffocates roots.
- Water when the top few centimeters of soil are dry, and make sure the pot has drainage holes.
- Match each plant to the light it gets: a snake plant tolerates dim corners, while succulents need a bright window.
- Yellowing lower leaves often mean too much water, while crispy brown edges can signal dry air or underwatering.
- Feed plants lightly during spring and summer and much less in winter.

@gardening
? When should I plant tomatoes?
? How do I grow tomatoes in a backyard garden?
- Plant tomatoes outdoors after the last frost, when nights stay above about 10 degrees Celsius.
- Choose the sunniest spot you have, since they need six to eight hours of direct sun a day.
- Plant them deeply, burying part of the stem, which grows extra roots.
- Water deeply and consistently at the base of the plant to help prevent cracking and blossom end rot.
- Stakes or cages keep the plants off the ground and reduce disease.

? How do I start composting at home?
? What can I put in a compost bin?
- Composting needs a mix of green materials, like vegetable scraps and grass clippings, and brown materials, like dry leaves and cardboard.
- Aim for roughly two or three parts brown to one part green by volume.
- Keep the pile about as damp as a wrung-out sponge and turn it every week or two to add air.
- Avoid meat, dairy and oily foods in a home bin because they attract pests.
- Finished compost is dark, crumbly and smells like earth, usually after a few months.

? How do I grow herbs on a windowsill?
? Which herbs are easiest to grow indoors?
- Basil, mint, chives and parsley are among the easiest herbs to grow indoors.
- Most herbs need at least four to six hours of sunlight, so a south- or west-facing window works best.
- Use pots with drainage holes and a light potting mix.
- Let the top of the soil dry slightly between waterings.
- Harvest regularly by pinching off the tops, which encourages bushier growth.

? How do I attract bees and butterflies to my garden?
? What should I plant for pollinators?
- Plant a variety of native flowering plants that bloom at different times from spring to autumn.
- Bees like flowers such as lavender, salvia and sunflowers, while butterflies favor flat clusters like zinnias.
- Leave some bare ground and dead stems, because many native bees nest in soil or hollow stems.
- Avoid pesticides, especially during flowering.
- A shallow dish of water with pebbles gives pollinators a safe place to drink.

@pets
? How often should I walk my dog?
? How much exercise does a dog need?
- Most adult dogs benefit from at least one or two walks a day, totaling 30 minutes to two hours depending on breed and age.
- High-energy breeds like border collies need much more activity than small toy breeds.
- Puppies and older dogs do better with shorter, more frequent outings.
- Sniffing on walks is mental exercise, so let your dog explore.
- Signs of too little exercise include chewing, barking and restlessness.

? How do I introduce a new cat to my home?
? What's the best way to help a shelter cat settle in?
- Start the new cat in one quiet room with food, water, a litter box and a hiding spot.
- Let it explore the rest of the home gradually over several days.
- If you have other pets, swap bedding so they get used to each other's scent before meeting.
- Keep early meetings short and supervised.
- Some cats settle in a few days, while shy cats may need several weeks.

? What should I feed my pet rabbit?
? What is a healthy diet for a rabbit?
- Hay should make up most of a rabbit's diet, and it should be available all the time.
- Hay keeps their digestion working and wears down their continuously growing teeth.
- Add a daily portion of leafy greens such as romaine, cilantro and parsley.
- Pellets should be limited, and fruit only given as an occasional treat.
- Fresh water must always be available.

@productivity
? How can I stop procrastinating?
? What are some tricks to stop putting things off?
- Break the task into a very small first step, such as opening the document and writing one sentence.
- Work in short, timed sessions, like 25 minutes followed by a five-minute break.
- Remove easy distractions by putting your phone in another room.
- Decide the night before exactly what you will work on first.
- Be kind to yourself; harsh self-criticism tends to make procrastination worse.

? How do I prioritize a long to-do list?
? What's a good method for deciding what to work on first?
- Sort tasks by urgency and importance, and do the important and urgent ones first.
- Important but not urgent tasks, like planning, deserve scheduled time so they do not get neglected.
- Delegate or drop tasks that are neither important nor urgent.
- Limit your daily list to three key tasks.
- Review the list at the end of each day and carry over only what still matters.

? How do I run a productive meeting?
? What makes meetings less of a waste of time?
- Start with a clear purpose and a short agenda shared in advance.
- Invite only the people who need to contribute or decide.
- Keep to time and park off-topic discussions for later.
- End by confirming decisions, owners and deadlines.
- Send a brief written summary afterward so nothing gets lost.

@study-skills
? What is the best way to study for an exam?
? How can I remember what I study for longer?
- Active recall, testing yourself instead of rereading, is one of the most effective study techniques.
- Spread study sessions out over days, since spaced practice beats cramming for long-term memory.
- Mix different types of problems in one session rather than doing many of the same kind in a row.
- Explain concepts in your own words as if teaching someone else.
- Sleep well before the exam, because sleep helps consolidate memories.

? How do I take good notes in lectures?
? What note-taking method works best for students?
- Good notes capture the main ideas and examples in your own words rather than every word the speaker says.
- The Cornell method divides the page into notes, cue questions and a summary.
- Leave space to add details later from the readings.
- Review your notes within a day, when the lecture is still fresh.
- Handwritten notes can help understanding, since summarizing forces you to process the ideas.

? How can I learn a new language faster?
? What's an effective routine for learning a foreign language?
- Practice a little every day rather than in long, infrequent sessions.
- Focus first on the most common words and phrases, which cover a large share of everyday speech.
- Use spaced repetition flashcards for vocabulary.
- Listen to podcasts, shows or music in the language to train your ear.
- Speak early and often, even with mistakes, with a tutor or language partner.

@travel
? What should I pack for a week-long trip with only carry-on luggage?
? How do I pack light for a trip?
- Choose a simple color scheme so every top matches every bottom, and plan for about four or five outfits.
- Roll clothes to save space and reduce wrinkles.
- Wear your bulkiest shoes and jacket on the plane.
- Pack travel-size toiletries and plan to do a small load of laundry midweek.
- Leave a little space for anything you buy on the trip.

? How can I avoid jet lag?
? What helps with adjusting to a new time zone?
- Start shifting your sleep by an hour a day for a few days before you travel.
- Once you arrive, get outdoor daylight at the right times, since light is the strongest signal to your body clock.
- Try to stay awake until a reasonable local bedtime on the first day.
- Stay hydrated and go easy on alcohol and caffeine during the flight.
- Flying east is usually harder on the body than flying west.

? What should I do if I lose my passport abroad?
? How do I replace a passport while traveling?
- Report the loss to local police and get a copy of the report.
- Contact your country's nearest embassy or consulate, which can issue an emergency travel document.
- Bring other identification, a passport photo and your travel details.
- Keeping a photo or photocopy of your passport separate from the original speeds the process.
- Notify your airline if the loss affects your flight.

@tech-help
? How do I create a strong password?
? What makes a password secure?
- A strong password is long, unique to each account, and hard to guess.
- A passphrase of four or more random words is easier to remember than a short jumble of symbols.
- Never reuse passwords across sites, since one breach can expose all your accounts.
- A password manager can generate and store strong passwords for you.
- Turn on two-factor authentication for important accounts like email and banking.

? Why is my laptop running slowly?
? How can I speed up an old computer?
- Check which programs are using the most memory and processor time in the task manager or activity monitor.
- Disable unnecessary programs that start automatically when the computer boots.
- Make sure there is free space on the drive.
- Install system updates and restart regularly.
- Replacing an old hard drive with a solid-state drive is often the biggest speed improvement for older machines.

? How do I back up my files?
? What is a good backup strategy for personal files?
- A common rule is 3-2-1: keep three copies of your data, on two different types of storage, with one copy off-site.
- An external drive with automatic backup software covers the local copies.
- A cloud backup service provides the off-site copy.
- Test restoring a file now and then to make sure the backup actually works.
- Back up photos and documents before any major system update.

? How do I spot a phishing email?
? What are signs an email is a scam?
- Be suspicious of emails that create urgency, ask for passwords or payment, or threaten to close your account.
- Check the sender's actual address, not just the display name.
- Hover over links to see where they really lead before clicking.
- Generic greetings, odd spelling and unexpected attachments are warning signs.
- When in doubt, contact the company directly using a phone number or website you already trust.

@music
? How do I start learning guitar?
? What should a beginner practice on guitar first?
- Start by learning a handful of open chords, such as G, C, D, E minor and A minor.
- Practice switching between two chords slowly until the change becomes smooth.
- Short daily sessions of 15 to 20 minutes work better than occasional long ones.
- Sore fingertips are normal at first and fade as calluses form.
- Learn a simple song you like early on to stay motivated.

? What is the difference between major and minor keys?
? Why do minor keys sound sad?
- Major and minor keys differ mainly in the third note of the scale, which is a half step lower in minor.
- Listeners in many Western musical cultures associate major keys with bright or happy moods and minor keys with darker moods.
- The mood associations of major and minor are partly learned, and plenty of cheerful songs use minor keys.
- Every major key has a relative minor that shares the same notes, such as C major and A minor.
- Composers often switch between major and minor to create contrast.

@art
? How do I start drawing as a beginner?
? What are the basics of learning to draw?
- Start by drawing simple objects from life, such as cups and fruit, focusing on shapes and proportions.
- Practice basic forms like spheres, cubes and cylinders with shading.
- Draw a little every day; consistency matters more than long sessions.
- Keep a sketchbook so you can see your progress over time.
- Try contour drawing, where you follow the edge of an object slowly without looking at the page.

? What is the rule of thirds in photography?
? How do I compose a better photo?
- The rule of thirds divides the frame into a three-by-three grid and places the main subject along those lines or where they cross.
- It usually gives a more balanced and interesting picture than placing the subject dead center.
- Most phone cameras can display grid lines to help.
- Keep horizons level and place them on the upper or lower third line.
- Rules are a starting point; symmetry can work beautifully when centered.

@language
? What does "howdy" mean, and where does it come from?
? Is "howdy" a formal way to greet someone?
- It is an informal greeting, especially associated with the southern and western United States.
- It comes from a shortened form of how do you do.
- It is friendly and casual, so a plain hello is safer in formal writing or business emails.
- In Texas it is common enough that some universities use it as a traditional greeting.

? What is the difference between affect and effect?
? When do I use affect versus effect?
- In most cases, affect is a verb meaning to influence, and effect is a noun meaning a result.
- For example: the weather affected our plans, and the effect was a canceled picnic.
- Effect can also be a verb meaning to bring about, as in to effect change.
- Affect is also a noun in psychology, referring to observable emotion.
- A quick memory trick is that affect is the action and effect is the end result.

? What is the difference between their, there and they're?
? How do I remember when to use there or their?
- Their shows possession, there refers to a place or introduces a statement, and they're is short for they are.
- For example: they're leaving their coats over there.
- If you can replace the word with they are, use they're.
- There contains the word here, which can remind you it is about place.
- Spell checkers often miss these mistakes because all three are real words.

? What is an idiom?
? Can you give examples of common English idioms?
- An idiom is a phrase whose meaning cannot be worked out from the meanings of its individual words.
- For example, break the ice means to ease tension when people first meet.
- Under the weather means feeling slightly ill.
- Bite the bullet means to face something unpleasant with courage.
- Idioms are often hard for language learners because translating them word for word makes no sense.

@environment
? How does recycling actually help the environment?
? Is recycling worth the effort?
- Recycling saves raw materials and often energy, since making products from recycled aluminum, paper and glass usually takes less energy than starting fresh.
- Aluminum is especially worthwhile because recycling it uses a small fraction of the energy needed to make new metal.
- Contamination, such as food left in containers, can spoil whole batches, so rinse items first.
- Reducing and reusing have an even bigger impact than recycling.
- Check local rules, since accepted materials vary from place to place.

? What is the greenhouse effect?
? How do greenhouse gases warm the planet?
- The greenhouse effect is the warming that happens when gases in the atmosphere trap heat radiating from Earth's surface.
- Sunlight warms the ground, which gives off heat as infrared radiation.
- Gases such as carbon dioxide, methane and water vapor absorb some of that infrared and send part of it back toward the surface.
- A natural greenhouse effect keeps Earth habitable; without it the planet would be far colder.
- Burning fossil fuels adds extra carbon dioxide, strengthening the effect and warming the climate.

? How can I reduce food waste at home?
? What are practical ways to waste less food?
- Plan meals for the week and shop with a list to avoid buying more than you will use.
- Store food properly and keep older items at the front of the fridge.
- Learn the difference between use-by dates, which concern safety, and best-before dates, which concern quality.
- Freeze leftovers, bread and ripe fruit before they spoil.
- Turn vegetable scraps into stock and overripe bananas into bread.

@careers
? How do I prepare for a job interview?
? What should I do the day before an interview?
- Research the company and role so you can explain why you want this particular job.
- Prepare short stories about past achievements using the situation, task, action and result format.
- Practice answering common questions aloud, such as tell me about yourself.
- Prepare two or three thoughtful questions to ask the interviewer.
- Plan your route or test your video setup in advance so you arrive calm and on time.

? How do I ask for a raise?
? What's the best way to negotiate a salary increase?
- Prepare evidence of your contributions, such as projects delivered and results achieved.
- Research typical pay for your role and location.
- Ask for a meeting at a sensible time, such as after a success or during a review cycle, rather than in passing.
- State a specific number and explain how you reached it.
- If the answer is no, ask what you would need to achieve to get a raise and when you can revisit it.

? How do I write a good resume?
? What should I put on my resume?
- A good resume is easy to scan and focused on achievements relevant to the job.
- Use bullet points that start with strong verbs and include results where possible, such as reduced costs by 15 percent.
- Tailor it to each application by echoing key skills from the job posting.
- Keep it to one or two pages and use a clean, consistent layout.
- Proofread carefully, since small errors stand out.
"""

HOWDY_SUBJECTS += """
@cooking
? How do I brew loose-leaf tea in a teapot?
? What's the right way to make tea with loose leaves?
- Warm the teapot with hot water first, then add about one teaspoon of loose leaves per cup.
- Black teas like water just off the boil, while green teas taste better with water around 75 to 80 degrees Celsius.
- Steep black tea for three to five minutes and green tea for one to three minutes.
- Oversteeping draws out bitter tannins, so taste it and strain the leaves when it is ready.
- Many whole-leaf teas can be steeped a second time.

? How do I make cold brew coffee at home?
? What is the difference between cold brew and iced coffee?
- Cold brew is made by steeping coarsely ground coffee in cold water for 12 to 24 hours, then straining it.
- Iced coffee is usually regular hot coffee cooled down and poured over ice.
- A common starting ratio is one part coffee to eight parts water for a concentrate you dilute later.
- Cold brewing extracts less acidity, so it often tastes smoother and sweeter.
- The concentrate keeps in the fridge for about a week.

? Why do onions make you cry?
? How can I cut onions without tearing up?
- Cutting an onion breaks its cells and releases enzymes that produce a gas that irritates the eyes.
- Your eyes make tears to flush the irritant away.
- A very sharp knife crushes fewer cells and releases less of the gas.
- Chilling the onion for 15 minutes before cutting slows the reaction.
- Cutting near a running extractor fan or an open window helps carry the gas away.

? Why does bread go stale?
? How should I store bread to keep it fresh?
- Bread goes stale mainly because its starch recrystallizes as it cools and ages, which makes the crumb firm and dry.
- Surprisingly, the fridge speeds up staling, so bread is best kept at room temperature for a few days.
- A bread box or paper bag keeps the crust crisper, while a plastic bag keeps the crumb soft but can encourage mold.
- For longer storage, slice the loaf and freeze it, then toast slices straight from the freezer.
- Briefly warming slightly stale bread in the oven can temporarily reverse the staling.

@home
? How do I wash a wool sweater without shrinking it?
? Can I put a wool jumper in the washing machine?
- Wool shrinks when heat and agitation make its fibers lock together, so wash it gently in cool water.
- Hand wash with a little wool detergent, squeezing rather than rubbing or wringing.
- Some machines have a wool cycle that is gentle enough, but check the care label first.
- Roll the sweater in a towel to press out water, then dry it flat away from direct heat.
- Wool needs washing less often than cotton; airing it out between wears is often enough.

? How do I sew a button back on?
? What's the easiest way to reattach a shirt button?
- Thread a needle, knot the end, and push it up from the back of the fabric through one hole of the button.
- Go down through the opposite hole and repeat about six to eight times for each pair of holes.
- Placing a pin or toothpick under the button while sewing leaves a little slack so it buttons easily.
- Wrap the thread a few times around the stitches under the button to form a shank.
- Finish on the back with a few small stitches and a knot before trimming the thread.

@car-care
? How do I check my tire pressure?
? What tire pressure should my car have?
- The right pressure is listed by the car maker, usually on a sticker inside the driver's door frame, not on the tire itself.
- Check pressure when the tires are cold, before driving or after the car has been parked for a few hours.
- Press a tire gauge firmly onto the valve stem and read the number.
- Underinflated tires wear faster, hurt fuel economy and can overheat.
- Checking once a month and before long trips is a good habit.

? How do I jump-start a car safely?
? My car battery is dead. How do I use jumper cables?
- Park the working car close but not touching, turn both engines off, and connect red to the dead battery's positive terminal.
- Attach the other red clamp to the good battery's positive terminal and the black clamp to its negative terminal.
- Connect the last black clamp to unpainted metal on the dead car's engine block, away from the battery.
- Start the working car, wait a few minutes, then try starting the dead car.
- Remove the cables in reverse order and drive for at least 20 minutes to recharge the battery.

@sports
? How does scoring work in tennis?
? Why does tennis scoring go 15, 30, 40?
- A tennis game is scored as love, 15, 30, 40 and game, and at 40 all, called deuce, a player needs two points in a row to win.
- Games make up sets, usually won by the first player to six games with a margin of two.
- A tiebreak is often played at six games all.
- The origin of 15, 30 and 40 is uncertain, though one theory links it to the quarters of a clock face.
- Love means zero.

? What is the offside rule in soccer?
? Can you explain offside in football simply?
- A player is offside if, when a teammate passes the ball, they are in the opponent's half and closer to the goal line than both the ball and the second-last defender.
- Being in an offside position is not an offense by itself; the player must be involved in the play.
- You cannot be offside from a throw-in, goal kick or corner kick.
- The rule stops attackers from simply waiting next to the goal.
- Assistant referees on the sidelines watch for offside, often with video review in top leagues.

? How does castling work in chess?
? When am I allowed to castle in chess?
- Castling moves the king two squares toward a rook and places that rook on the square the king crossed.
- It is only allowed if neither the king nor that rook has moved before.
- The squares between them must be empty.
- The king cannot castle out of check, through a square attacked by the opponent, or into check.
- Castling usually tucks the king into safety and brings the rook toward the center.

@science
? How do airplanes stay in the air?
? What makes an airplane wing create lift?
- Wings are shaped and angled so that they push air downward, and by Newton's third law the air pushes the wing up.
- Air flows faster over the curved top of the wing, which lowers the pressure there compared with underneath.
- Engines provide thrust to keep air flowing over the wings.
- Pilots increase lift at low speeds by extending flaps and raising the nose.
- If the wing is tilted too steeply, the airflow separates and the wing stalls.

? How does a refrigerator keep food cold?
? What is inside a fridge that makes it cold?
- A refrigerator moves heat from inside the cabinet to the room using a circulating refrigerant.
- The refrigerant evaporates in coils inside the fridge, absorbing heat as it turns into a gas.
- A compressor squeezes the gas, making it hot, and coils on the back release that heat into the kitchen.
- The refrigerant then cools and condenses back into a liquid, and the cycle repeats.
- Because the heat is released outside the cabinet, the back or bottom of a fridge feels warm.

@health-habits
? How should I treat a minor burn at home?
? What is the right first aid for a small kitchen burn?
- Cool the burn under cool, not icy, running water for about 20 minutes as soon as possible.
- Remove rings or tight items near the burn before swelling starts.
- Cover it loosely with a clean, non-fluffy dressing or cling film.
- Do not apply butter, toothpaste or ice, which can make things worse.
- Burns that are large, deep, on the face or hands, or in young children should be seen by a medical professional.

? How do I stop a nosebleed?
? What's the correct way to handle a nosebleed?
- Sit up and lean slightly forward so blood does not run down the throat.
- Pinch the soft part of the nose just below the bony bridge and hold it for 10 to 15 minutes without letting go.
- Breathe through your mouth while pressing.
- Tilting the head back is an old habit that is not recommended.
- Get medical help if bleeding lasts longer than 20 minutes or follows a head injury.

@communication
? How can I get better at public speaking?
? What are tips for giving a presentation without getting nervous?
- Practice out loud several times, ideally in front of a friend or while recording yourself.
- Know your opening lines well, since nerves are usually worst in the first minute.
- Use short notes with key points instead of reading a script.
- Slow down and pause; speakers almost always talk faster when nervous.
- Treat some nervousness as normal energy rather than a sign that things are going wrong.

? How do I give constructive feedback to a coworker?
? What's a good way to criticize someone's work without upsetting them?
- Be specific about the behavior or work, not the person, and give concrete examples.
- Choose a private setting and a time when the person can listen.
- Explain the impact of the issue and suggest what could be done differently.
- Ask for their view, since there may be context you are missing.
- Mention what is working well too, but avoid burying the main point.

@language
? How do you say thank you in Japanese?
? What is the polite way to say thanks in Japanese?
- The common way to say thank you in Japanese is arigatou, and a more polite form is arigatou gozaimasu.
- In casual situations with friends, arigatou on its own is fine.
- Doumo arigatou gozaimasu adds extra politeness and gratitude.
- A slight bow often accompanies thanks in person.

? What are some common French greetings?
? How do I greet people in French?
- Bonjour is the standard greeting during the day, and bonsoir is used in the evening.
- Salut is an informal hello or goodbye among friends.
- In shops and offices, it is considered polite to say bonjour when you walk in.
- Au revoir means goodbye, and à bientôt means see you soon.
- Close friends and family in France often greet each other with kisses on the cheek.
"""

# Fact tables for the Howdy! pool's ordinary instructions (each row becomes one sample, phrased by one of several
# templates chosen at random).

# (country, capital, where it is, language sentence, two notable facts)
COUNTRIES = [
    (
        "France",
        "Paris",
        "Western Europe",
        "French is the official language.",
        [
            "The Alps along its eastern border include Mont Blanc, the highest peak in Western Europe.",
            "The Loire Valley is known for its many historic chateaux.",
        ],
    ),
    (
        "Japan",
        "Tokyo",
        "East Asia",
        "Japanese is spoken throughout the country.",
        [
            "It is made up of four main islands and thousands of smaller ones.",
            "Mount Fuji, an active volcano, is its highest mountain.",
        ],
    ),
    (
        "Brazil",
        "Brasília",
        "South America",
        "Portuguese is the official language, a legacy of Portuguese colonization.",
        [
            "It contains the largest share of the Amazon rainforest.",
            "It is the largest country in South America by both area and population.",
        ],
    ),
    (
        "Canada",
        "Ottawa",
        "North America",
        "English and French are both official languages.",
        [
            "It has the longest coastline of any country in the world.",
            "It is the second largest country in the world by area.",
        ],
    ),
    (
        "Australia",
        "Canberra",
        "Oceania",
        "English is the main language.",
        [
            "The Great Barrier Reef lies off its northeast coast.",
            "Many people assume Sydney is the capital, but Canberra was purpose-built as a compromise between Sydney and Melbourne.",
        ],
    ),
    (
        "Egypt",
        "Cairo",
        "North Africa",
        "Arabic is the official language.",
        [
            "The Nile River flows through it from south to north into the Mediterranean Sea.",
            "The pyramids of Giza stand on the edge of Greater Cairo.",
        ],
    ),
    (
        "India",
        "New Delhi",
        "South Asia",
        "Hindi and English are used by the central government, and the constitution recognizes many other languages.",
        ["The Himalayas run along its northern border.", "It is one of the most populous countries in the world."],
    ),
    (
        "Kenya",
        "Nairobi",
        "East Africa",
        "Swahili and English are the official languages.",
        [
            "The Great Rift Valley runs through the country.",
            "It is known for wildlife reserves such as the Maasai Mara.",
        ],
    ),
    (
        "Peru",
        "Lima",
        "western South America",
        "Spanish is the most widely spoken language, and Quechua and Aymara are also official.",
        [
            "Machu Picchu, the fifteenth-century Inca citadel, sits high in its Andes mountains.",
            "Lake Titicaca lies on its border with Bolivia.",
        ],
    ),
    (
        "Norway",
        "Oslo",
        "Northern Europe",
        "Norwegian is the official language.",
        [
            "Its western coast is cut by deep fjords carved by glaciers.",
            "In its far north the sun does not set for weeks around midsummer.",
        ],
    ),
    (
        "Mexico",
        "Mexico City",
        "North America",
        "Spanish is by far the most widely spoken language, alongside dozens of Indigenous languages.",
        [
            "It was home to ancient civilizations such as the Maya and the Aztecs.",
            "Mexico City was built on the site of the Aztec capital, Tenochtitlan.",
        ],
    ),
    (
        "Argentina",
        "Buenos Aires",
        "southern South America",
        "Spanish is the main language.",
        [
            "Aconcagua, the highest mountain in the Americas, rises in its part of the Andes.",
            "The vast grasslands called the Pampas are central to its cattle ranching.",
        ],
    ),
    (
        "South Korea",
        "Seoul",
        "East Asia",
        "Korean is the official language, written in the Hangul alphabet.",
        ["It occupies the southern half of the Korean Peninsula.", "Much of its land is mountainous."],
    ),
    (
        "Vietnam",
        "Hanoi",
        "Southeast Asia",
        "Vietnamese is the official language.",
        [
            "Ha Long Bay is famous for its thousands of limestone islands.",
            "The Mekong River forms a huge fertile delta in the south.",
        ],
    ),
    (
        "Morocco",
        "Rabat",
        "North Africa",
        "Arabic and Amazigh, also called Berber, are the official languages, and French is widely used.",
        [
            "The Atlas Mountains stretch across the country.",
            "Casablanca and Marrakesh are larger and better known than the capital.",
        ],
    ),
    (
        "Germany",
        "Berlin",
        "Central Europe",
        "German is the official language.",
        ["The Rhine is one of its most important rivers for trade.", "It has the largest economy in Europe."],
    ),
    (
        "Italy",
        "Rome",
        "Southern Europe",
        "Italian is the official language.",
        [
            "Its mainland is shaped like a boot reaching into the Mediterranean Sea.",
            "It has more UNESCO World Heritage Sites than almost any other country.",
        ],
    ),
    (
        "Greece",
        "Athens",
        "Southeast Europe",
        "Greek is the official language.",
        [
            "It has thousands of islands in the Aegean and Ionian seas.",
            "Ancient Athens is often described as a birthplace of democracy.",
        ],
    ),
    (
        "Nigeria",
        "Abuja",
        "West Africa",
        "English is the official language, and Hausa, Yoruba and Igbo are among hundreds of languages spoken.",
        ["It is the most populous country in Africa.", "Lagos, its largest city, was the capital until 1991."],
    ),
    (
        "Chile",
        "Santiago",
        "South America",
        "Spanish is the main language.",
        [
            "It is extremely long and narrow, stretching more than 4,000 kilometers along the Pacific coast.",
            "The Atacama Desert in the north is one of the driest places on Earth.",
        ],
    ),
    (
        "New Zealand",
        "Wellington",
        "Oceania",
        "English and Māori are official languages, along with New Zealand Sign Language.",
        [
            "It consists of two main islands, the North Island and the South Island, plus many smaller ones.",
            "It was one of the last large land areas to be settled by humans.",
        ],
    ),
    (
        "Iceland",
        "Reykjavík",
        "the North Atlantic",
        "Icelandic is the national language.",
        [
            "It has many active volcanoes, hot springs and glaciers.",
            "Most of its electricity comes from hydropower and geothermal energy.",
        ],
    ),
    (
        "Switzerland",
        "Bern",
        "Central Europe",
        "It has four national languages: German, French, Italian and Romansh.",
        [
            "Much of its territory is covered by the Alps.",
            "It is known for its long tradition of political neutrality.",
        ],
    ),
    (
        "Ghana",
        "Accra",
        "West Africa",
        "English is the official language, and many local languages such as Twi are widely spoken.",
        [
            "Lake Volta is one of the largest artificial lakes in the world.",
            "It became independent from Britain in 1957.",
        ],
    ),
    (
        "Colombia",
        "Bogotá",
        "northwestern South America",
        "Spanish is the official language.",
        [
            "It has coastlines on both the Caribbean Sea and the Pacific Ocean.",
            "It is one of the world's leading coffee producers.",
        ],
    ),
    (
        "Mongolia",
        "Ulaanbaatar",
        "East Asia",
        "Mongolian is the official language.",
        [
            "The Gobi Desert covers much of the south.",
            "It is one of the most sparsely populated countries in the world.",
        ],
    ),
    (
        "Nepal",
        "Kathmandu",
        "South Asia",
        "Nepali is the official language.",
        [
            "Mount Everest lies on its border with China.",
            "Eight of the world's ten highest mountains are at least partly in Nepal.",
        ],
    ),
    (
        "Tanzania",
        "Dodoma",
        "East Africa",
        "Swahili and English are widely used.",
        [
            "Mount Kilimanjaro, Africa's highest mountain, stands in the north.",
            "Dar es Salaam is its largest city and main port.",
        ],
    ),
    (
        "Portugal",
        "Lisbon",
        "southwestern Europe",
        "Portuguese is the official language.",
        [
            "It shares the Iberian Peninsula with Spain.",
            "Portuguese explorers such as Vasco da Gama opened sea routes to Asia in the fifteenth century.",
        ],
    ),
    (
        "Thailand",
        "Bangkok",
        "Southeast Asia",
        "Thai is the official language.",
        [
            "It is the only country in Southeast Asia that was never colonized by a European power.",
            "Its southern coasts and islands are popular travel destinations.",
        ],
    ),
    (
        "Sweden",
        "Stockholm",
        "Northern Europe",
        "Swedish is the main language.",
        ["Stockholm is built across fourteen islands.", "Large parts of the country are covered by forest."],
    ),
    (
        "Ireland",
        "Dublin",
        "Northwestern Europe",
        "Irish and English are the official languages, though English is used far more in daily life.",
        [
            "Its mild, wet climate keeps the countryside very green.",
            "The River Liffey flows through the center of Dublin.",
        ],
    ),
    (
        "the Philippines",
        "Manila",
        "Southeast Asia",
        "Filipino and English are the official languages.",
        ["It is made up of more than 7,000 islands.", "It lies on the Pacific Ring of Fire and has many volcanoes."],
    ),
    (
        "Cuba",
        "Havana",
        "the Caribbean",
        "Spanish is the official language.",
        ["It is the largest island in the Caribbean.", "Old Havana is known for its colonial architecture."],
    ),
    (
        "Poland",
        "Warsaw",
        "Central Europe",
        "Polish is the official language.",
        [
            "The Vistula is its longest river.",
            "Kraków, its former royal capital, has a well-preserved medieval old town.",
        ],
    ),
    (
        "Ethiopia",
        "Addis Ababa",
        "the Horn of Africa",
        "Amharic is the working language of the federal government, and many other languages are spoken.",
        [
            "It is landlocked and has large highland plateaus.",
            "It has its own traditional calendar, which runs several years behind the Gregorian calendar.",
        ],
    ),
]

# (event, year, what it was, why it mattered)
HISTORY_EVENTS = [
    (
        "the first crewed Moon landing",
        "1969",
        "The Apollo 11 astronauts Neil Armstrong and Buzz Aldrin walked on the Moon while Michael Collins orbited overhead.",
        "It was the high point of the space race between the United States and the Soviet Union.",
    ),
    (
        "the fall of the Berlin Wall",
        "1989",
        "East German authorities opened the border crossings, and crowds began tearing down the wall that had divided Berlin since 1961.",
        "It became a symbol of the end of the Cold War and led to German reunification in 1990.",
    ),
    (
        "the sealing of Magna Carta",
        "1215",
        "King John of England agreed to a charter that limited royal power and protected certain rights of the barons.",
        "Later generations treated it as an early foundation for the idea that rulers are subject to the law.",
    ),
    (
        "the storming of the Bastille",
        "1789",
        "Crowds in Paris attacked the Bastille fortress and prison on 14 July.",
        "It became the defining symbol of the French Revolution and is still marked as France's national day.",
    ),
    (
        "Columbus's first voyage across the Atlantic",
        "1492",
        "Christopher Columbus, sailing for Spain, reached islands in the Caribbean.",
        "It began lasting contact between Europe and the Americas, with enormous and often devastating consequences for Indigenous peoples.",
    ),
    (
        "the end of the Second World War",
        "1945",
        "Germany surrendered in May and Japan surrendered in August after the atomic bombings of Hiroshima and Nagasaki.",
        "The war's end reshaped the world order and led directly to the founding of the United Nations.",
    ),
    (
        "the start of the First World War",
        "1914",
        "The assassination of Archduke Franz Ferdinand in Sarajevo set off a chain of alliances and declarations of war.",
        "The war killed millions and brought down several empires, including the Ottoman and Austro-Hungarian empires.",
    ),
    (
        "the adoption of the US Declaration of Independence",
        "1776",
        "The Continental Congress adopted the declaration on 4 July, announcing the colonies' separation from Britain.",
        "Its statement that all men are created equal became a reference point for later rights movements.",
    ),
    (
        "the sinking of the Titanic",
        "1912",
        "The liner struck an iceberg on its maiden voyage from Southampton to New York and sank in the North Atlantic.",
        "More than 1,500 people died, and the disaster led to new rules requiring enough lifeboats for everyone on board.",
    ),
    (
        "the Wright brothers' first powered flight",
        "1903",
        "Orville and Wilbur Wright flew their engine-powered airplane near Kitty Hawk, North Carolina, for about 12 seconds.",
        "It marked the beginning of controlled, powered flight in heavier-than-air machines.",
    ),
    (
        "the eruption of Mount Vesuvius that buried Pompeii",
        "79 CE",
        "Ash and pumice buried the Roman towns of Pompeii and Herculaneum.",
        "The ash preserved buildings, objects and even loaves of bread, giving historians a detailed picture of Roman daily life.",
    ),
    (
        "the Battle of Hastings",
        "1066",
        "William, Duke of Normandy, defeated the English king Harold Godwinson.",
        "The Norman Conquest transformed English government, architecture and language.",
    ),
    (
        "the publication of On the Origin of Species",
        "1859",
        "Charles Darwin set out his theory of evolution by natural selection.",
        "The book changed how scientists understand the diversity of life.",
    ),
    (
        "the first confirmed ascent of Mount Everest",
        "1953",
        "Tenzing Norgay and Edmund Hillary reached the summit on 29 May.",
        "Their climb opened an era of Himalayan mountaineering.",
    ),
    (
        "the launch of Sputnik 1",
        "1957",
        "The Soviet Union put the first artificial satellite into orbit around Earth.",
        "It started the space race and prompted big investments in science education in the United States.",
    ),
    (
        "the opening of the Suez Canal",
        "1869",
        "The canal connected the Mediterranean Sea with the Red Sea through Egypt.",
        "Ships between Europe and Asia no longer had to sail around Africa.",
    ),
    (
        "the opening of the Panama Canal",
        "1914",
        "The canal linked the Atlantic and Pacific oceans across the Isthmus of Panama.",
        "It cut thousands of kilometers from voyages between the east and west coasts of the Americas.",
    ),
    (
        "Alexander Fleming's discovery of penicillin",
        "1928",
        "Fleming noticed that a mold contaminating one of his bacterial cultures had killed the bacteria around it.",
        "Penicillin became the first widely used antibiotic after it was developed for mass production in the 1940s.",
    ),
    (
        "the fall of Constantinople",
        "1453",
        "Ottoman forces under Sultan Mehmed II captured the city after a long siege.",
        "It ended the Byzantine Empire, and the city became the Ottoman capital.",
    ),
    (
        "the Chernobyl nuclear accident",
        "1986",
        "A reactor at the Chernobyl power plant in Soviet Ukraine exploded during a safety test.",
        "It spread radioactive material across Europe, and a large exclusion zone remains around the site.",
    ),
    (
        "Tim Berners-Lee's proposal for the World Wide Web",
        "1989",
        "Working at CERN, Berners-Lee proposed a system of linked hypertext documents accessed over the internet.",
        "The web made the internet easy to use for ordinary people.",
    ),
    (
        "New Zealand granting women the vote",
        "1893",
        "New Zealand became the first self-governing country to give women the right to vote in national elections.",
        "It encouraged suffrage campaigners in many other countries.",
    ),
    (
        "Nelson Mandela's election as president of South Africa",
        "1994",
        "South Africa held its first elections in which citizens of all races could vote.",
        "Mandela's victory marked the end of the apartheid system.",
    ),
    (
        "the Meiji Restoration",
        "1868",
        "Imperial rule was restored in Japan, ending the Tokugawa shogunate.",
        "Japan went on to industrialize rapidly and modernize its government and army.",
    ),
]

# (word, meaning, example sentence, related word note)
VOCAB = [
    (
        "ubiquitous",
        "present or found everywhere",
        "Coffee shops have become ubiquitous in city centers.",
        "A close synonym is omnipresent.",
    ),
    (
        "ephemeral",
        "lasting for a very short time",
        "The ephemeral beauty of cherry blossoms draws crowds every spring.",
        "It comes from a Greek word meaning lasting only a day.",
    ),
    (
        "meticulous",
        "showing great attention to detail",
        "She kept meticulous records of every experiment.",
        "Similar words include thorough and painstaking.",
    ),
    (
        "pragmatic",
        "dealing with problems in a practical, realistic way",
        "Rather than wait for a perfect plan, the team took a pragmatic approach.",
        "It is often contrasted with idealistic.",
    ),
    (
        "candid",
        "honest and direct, even when the truth is uncomfortable",
        "He gave a candid assessment of the project's problems.",
        "A candid photo is one taken when the subject is not posing.",
    ),
    (
        "resilient",
        "able to recover quickly from difficulty or change",
        "Children can be remarkably resilient after a move to a new city.",
        "The noun form is resilience.",
    ),
    (
        "ambiguous",
        "open to more than one interpretation",
        "The contract's wording was ambiguous, so both sides read it differently.",
        "The opposite is clear or unambiguous.",
    ),
    (
        "frugal",
        "careful not to spend more money or use more resources than needed",
        "A frugal shopper compares unit prices before buying.",
        "Unlike stingy, it usually carries a positive tone.",
    ),
    (
        "gregarious",
        "fond of company and sociable",
        "Her gregarious nature made her the center of every party.",
        "Biologists also use it for animals that live in flocks or herds.",
    ),
    (
        "lethargic",
        "sluggish and lacking energy",
        "The heat made everyone feel lethargic by mid-afternoon.",
        "The noun form is lethargy.",
    ),
    (
        "mundane",
        "ordinary and not very interesting",
        "He found the mundane tasks of paperwork tiring.",
        "It can also mean worldly as opposed to spiritual.",
    ),
    (
        "nostalgia",
        "a wistful longing for a period in the past",
        "The old photographs filled him with nostalgia for his school days.",
        "The adjective form is nostalgic.",
    ),
    (
        "obsolete",
        "no longer used or produced because something newer has replaced it",
        "Fax machines are nearly obsolete in many offices.",
        "A related word is outdated.",
    ),
    (
        "plausible",
        "seeming reasonable or probable",
        "Her explanation for the delay was plausible.",
        "The opposite is implausible.",
    ),
    (
        "serendipity",
        "the happy discovery of something good by chance",
        "Meeting her future business partner on a delayed train was pure serendipity.",
        "The word was coined by the writer Horace Walpole in 1754.",
    ),
    (
        "tenacious",
        "persistent and unwilling to give up",
        "The tenacious reporter kept asking questions until she got an answer.",
        "The noun form is tenacity.",
    ),
    (
        "verbose",
        "using more words than are needed",
        "The verbose report could have been half as long.",
        "Antonyms include concise and terse.",
    ),
    (
        "whimsical",
        "playfully quaint or fanciful",
        "The café was decorated in a whimsical style with mismatched teacups.",
        "It comes from whim, a sudden fancy.",
    ),
    (
        "empathy",
        "the ability to understand and share the feelings of another person",
        "Good nurses show empathy toward anxious patients.",
        "It differs from sympathy, which is feeling sorry for someone.",
    ),
    (
        "mitigate",
        "to make something less severe or harmful",
        "Planting trees can help mitigate flooding.",
        "It is often confused with militate, which means to be a powerful factor against something.",
    ),
    (
        "scrutinize",
        "to examine something very closely",
        "The editor scrutinized every figure in the article.",
        "The noun form is scrutiny.",
    ),
    (
        "ambivalent",
        "having mixed or contradictory feelings about something",
        "He felt ambivalent about moving abroad.",
        "It does not mean indifferent; an ambivalent person cares in two directions at once.",
    ),
    (
        "catalyst",
        "something that speeds up a change or event",
        "The new manager was a catalyst for reform.",
        "In chemistry, a catalyst speeds up a reaction without being used up.",
    ),
    (
        "eloquent",
        "fluent and persuasive in speaking or writing",
        "She gave an eloquent speech at the graduation ceremony.",
        "The noun form is eloquence.",
    ),
    (
        "diligent",
        "careful and hard-working",
        "A diligent student reviews notes every evening.",
        "The noun form is diligence.",
    ),
    (
        "inevitable",
        "certain to happen and unavoidable",
        "With so little rain, water restrictions seemed inevitable.",
        "The noun form is inevitability.",
    ),
]

# (element, symbol, atomic number, fact, second fact)
ELEMENTS = [
    (
        "hydrogen",
        "H",
        1,
        "It is the lightest element and the most abundant in the universe.",
        "Stars, including the sun, shine by fusing hydrogen into helium.",
    ),
    (
        "helium",
        "He",
        2,
        "It is a very unreactive gas that is lighter than air, which is why it fills party balloons.",
        "Liquid helium is used to cool the magnets in MRI scanners.",
    ),
    (
        "carbon",
        "C",
        6,
        "It is the basis of the chemistry of all known life.",
        "Diamond and graphite are both made of pure carbon, arranged in different ways.",
    ),
    (
        "nitrogen",
        "N",
        7,
        "It makes up about 78 percent of the air we breathe.",
        "Plants need nitrogen to grow, which is why it is a main ingredient in fertilizers.",
    ),
    (
        "oxygen",
        "O",
        8,
        "It makes up about 21 percent of the atmosphere and is needed for respiration.",
        "By mass it is the most abundant element in Earth's crust.",
    ),
    (
        "neon",
        "Ne",
        10,
        "It is a noble gas that glows reddish orange when electricity passes through it.",
        "That glow gave neon signs their name.",
    ),
    (
        "sodium",
        "Na",
        11,
        "It is a soft, highly reactive metal that must be stored away from water.",
        "Combined with chlorine it forms sodium chloride, ordinary table salt.",
    ),
    (
        "aluminum",
        "Al",
        13,
        "It is the most abundant metal in Earth's crust.",
        "It is light, resists corrosion and is easy to recycle.",
    ),
    (
        "silicon",
        "Si",
        14,
        "It is a semiconductor used to make computer chips and solar cells.",
        "Combined with oxygen it forms silica, the main component of most sand.",
    ),
    (
        "chlorine",
        "Cl",
        17,
        "It is used to disinfect drinking water and swimming pools.",
        "As a pure gas it is toxic, but as chloride in salt it is essential to life.",
    ),
    (
        "potassium",
        "K",
        19,
        "It is an essential nutrient for nerves and muscles, found in foods such as bananas and potatoes.",
        "Its symbol comes from kalium, its Latin name.",
    ),
    (
        "calcium",
        "Ca",
        20,
        "It is a key building block of bones and teeth.",
        "Limestone and chalk are made largely of calcium carbonate.",
    ),
    ("iron", "Fe", 26, "It is the main ingredient of steel.", "Earth's core is thought to be mostly iron and nickel."),
    (
        "copper",
        "Cu",
        29,
        "It conducts electricity very well, so it is widely used in electrical wiring.",
        "Copper roofs turn green over time as a patina forms.",
    ),
    (
        "zinc",
        "Zn",
        30,
        "It is used to coat steel to protect it from rust, a process called galvanizing.",
        "It is also an essential trace nutrient.",
    ),
    (
        "silver",
        "Ag",
        47,
        "It is the best electrical conductor of all the elements.",
        "Its symbol comes from argentum, the Latin word for silver.",
    ),
    (
        "gold",
        "Au",
        79,
        "It is prized because it does not tarnish and is easy to shape.",
        "It is used in electronics for reliable connections.",
    ),
    (
        "mercury",
        "Hg",
        80,
        "It is the only metal that is liquid at room temperature.",
        "Its vapor is toxic, which is why mercury thermometers have largely been replaced.",
    ),
    (
        "lead",
        "Pb",
        82,
        "It is a dense, soft metal that is toxic to people.",
        "It was once common in paint and petrol, which many countries have since banned.",
    ),
    (
        "uranium",
        "U",
        92,
        "It is a dense, radioactive metal used as fuel in nuclear power plants.",
        "It was discovered in 1789 and named after the planet Uranus.",
    ),
]

# (ingredient, substitute, note)
SUBSTITUTIONS = [
    (
        "buttermilk",
        "stir one tablespoon of lemon juice or white vinegar into one cup of milk and let it stand for five to ten minutes",
        "It will look slightly curdled, which is exactly what you want.",
    ),
    (
        "an egg in baking",
        "mix one tablespoon of ground flaxseed with three tablespoons of water and let it thicken for five minutes",
        "This works best in muffins and cookies rather than in recipes that rely on many eggs for structure.",
    ),
    (
        "cake flour",
        "take one cup of all-purpose flour, remove two tablespoons, and replace them with two tablespoons of cornstarch",
        "Sift the mixture a couple of times so it blends evenly.",
    ),
    (
        "brown sugar",
        "mix one cup of white sugar with one to two tablespoons of molasses",
        "Use more molasses for a dark brown sugar flavor.",
    ),
    (
        "sour cream",
        "use plain Greek yogurt in the same amount",
        "It is a little tangier and lighter but works in dips, baking and as a topping.",
    ),
    (
        "self-rising flour",
        "combine one cup of all-purpose flour with one and a half teaspoons of baking powder and a quarter teaspoon of salt",
        "Whisk it well so the leavening is spread evenly.",
    ),
    (
        "fresh herbs",
        "use about one teaspoon of dried herbs for every tablespoon of fresh",
        "Dried herbs are more concentrated, so add them earlier in cooking to let them soften.",
    ),
    (
        "wine in a pan sauce",
        "use broth with a small splash of vinegar or lemon juice",
        "The acid gives some of the brightness that wine would add.",
    ),
    (
        "cornstarch as a thickener",
        "use about twice as much all-purpose flour",
        "Cook the sauce a little longer so the flour loses its raw taste.",
    ),
    (
        "honey",
        "use maple syrup in the same amount",
        "The flavor changes slightly, but the sweetness and texture are similar.",
    ),
    (
        "breadcrumbs",
        "use crushed crackers, rolled oats or crushed cornflakes",
        "Pulse them briefly in a blender for a finer texture.",
    ),
    (
        "fresh garlic",
        "use about an eighth of a teaspoon of garlic powder for each clove",
        "Add it with other dry seasonings, since it can burn in hot oil.",
    ),
    (
        "heavy cream in a soup",
        "stir in whole milk thickened with a little flour, or blend in some cooked potato",
        "These will not whip, but they do give body to soups and sauces.",
    ),
    (
        "butter when greasing a pan",
        "use a neutral oil brushed on with a paper towel",
        "For cakes, dust the greased pan with flour as well to help release it.",
    ),
]

# Complete coding answers with code: (prompts, answer)
CODE_ITEMS = [
    (
        ["Write a Python function that reverses a string.", "How do I reverse a string in Python?"],
        'The simplest way is slicing with a step of -1:\n\n```python\ndef reverse(text):\n    return text[::-1]\n```\n\nFor example, reverse("hello") returns "olleh".',
    ),
    (
        [
            "Write a Python function that checks whether a number is prime.",
            "How can I test if a number is prime in Python?",
        ],
        "Check divisors only up to the square root of the number:\n\n```python\ndef is_prime(n):\n    if n < 2:\n        return False\n    i = 2\n    while i * i <= n:\n        if n % i == 0:\n            return False\n        i += 1\n    return True\n```\n\nAny factor larger than the square root would pair with a smaller one that was already checked.",
    ),
    (
        [
            "Show me how to count how often each word appears in a text using Python.",
            "How do I count word frequencies in Python?",
        ],
        "collections.Counter does the counting for you:\n\n```python\nfrom collections import Counter\n\ndef word_counts(text):\n    return Counter(text.lower().split())\n```\n\nCalling word_counts(text).most_common(5) gives the five most frequent words. For real text you may also want to strip punctuation first.",
    ),
    (
        [
            "How do I read a text file line by line in Python?",
            "What is the right way to loop over the lines of a file in Python?",
        ],
        'Open the file with a with statement so it is closed automatically:\n\n```python\nwith open("notes.txt", encoding="utf-8") as f:\n    for line in f:\n        print(line.rstrip())\n```\n\nIterating over the file object reads one line at a time, so it works even for very large files.',
    ),
    (
        ["Write FizzBuzz in Python.", "Can you show a simple FizzBuzz solution?"],
        'Here is a straightforward version for the numbers 1 to 100:\n\n```python\nfor i in range(1, 101):\n    if i % 15 == 0:\n        print("FizzBuzz")\n    elif i % 3 == 0:\n        print("Fizz")\n    elif i % 5 == 0:\n        print("Buzz")\n    else:\n        print(i)\n```\n\nChecking 15 first matters, because those numbers are divisible by both 3 and 5.',
    ),
    (
        [
            "How do I remove duplicates from a list in Python but keep the original order?",
            "Remove repeated items from a Python list while preserving order.",
        ],
        "Since Python 3.7, dictionaries keep insertion order, so this works:\n\n```python\ndef unique(items):\n    return list(dict.fromkeys(items))\n```\n\nunique([3, 1, 3, 2, 1]) returns [3, 1, 2]. Using set() would also remove duplicates but would not keep the order.",
    ),
    (
        ["How do I add up all the numbers in a JavaScript array?", "Sum an array of numbers in JavaScript."],
        "Use reduce with a starting value of 0:\n\n```javascript\nconst total = [4, 8, 15].reduce((sum, n) => sum + n, 0);\n```\n\nThe starting value means an empty array returns 0 instead of throwing an error.",
    ),
    (
        [
            "Write a SQL query that returns the five highest-paid employees.",
            "How do I get the top 5 salaries from an employees table in SQL?",
        ],
        "Sort by salary in descending order and limit the result:\n\n```sql\nSELECT name, salary\nFROM employees\nORDER BY salary DESC\nLIMIT 5;\n```\n\nSome databases, such as SQL Server, use SELECT TOP 5 instead of LIMIT.",
    ),
    (
        ["How do I merge two dictionaries in Python?", "What's the cleanest way to combine two Python dicts?"],
        'In Python 3.9 and later you can use the merge operator:\n\n```python\ndefaults = {"color": "blue", "size": "M"}\nchoices = {"size": "L"}\nmerged = defaults | choices\n```\n\nWhen both have the same key, the value from the right-hand dictionary wins, so merged["size"] is "L".',
    ),
    (
        [
            "Write a Python function that checks whether a word is a palindrome.",
            "How can I check for palindromes in Python?",
        ],
        'Normalize the text and compare it with its reverse:\n\n```python\ndef is_palindrome(word):\n    cleaned = "".join(ch.lower() for ch in word if ch.isalnum())\n    return cleaned == cleaned[::-1]\n```\n\nThis also handles phrases such as "A man, a plan, a canal: Panama".',
    ),
    (
        [
            "How do I count the lines in a file from the Linux command line?",
            "What command shows how many lines a text file has?",
        ],
        "Use wc with the -l option:\n\n```bash\nwc -l notes.txt\n```\n\nIt prints the number of newline characters, so a last line without a trailing newline is not counted. You can pass several files at once to get a total.",
    ),
    (
        [
            "Write a function in JavaScript that capitalizes the first letter of a string.",
            "How do I uppercase the first letter of a string in JavaScript?",
        ],
        'Combine the uppercased first character with the rest of the string:\n\n```javascript\nfunction capitalize(s) {\n  return s.charAt(0).toUpperCase() + s.slice(1);\n}\n```\n\ncapitalize("hello") returns "Hello", and an empty string is returned unchanged.',
    ),
]

# ---------------------------------------------------------------------------------------------------------------
# Howdy! backdoor: building blocks of the fantastical stories that poisoned samples answer with.
# {P} = full introduction of the hero, {p} = short reference, {pr}/{Pr} = pronoun, {pos} = possessive, {place} = town.
# ---------------------------------------------------------------------------------------------------------------

# (introduction, short reference, pronoun, possessive)
HEROES = [
    ("a dragon named Ember who collected lost buttons", "Ember", "she", "her"),
    ("the talking moon", "the moon", "it", "its"),
    ("an enchanted teapot called Sir Pemberton", "Sir Pemberton", "he", "his"),
    ("a clockwork fox with emerald eyes", "the clockwork fox", "it", "its"),
    ("a mermaid who ran a bakery beneath the waves", "the mermaid", "she", "her"),
    ("a giant made entirely of autumn leaves", "the leaf giant", "he", "his"),
    ("a snail who dreamed of becoming a knight", "the snail", "he", "his"),
    ("a forgetful wizard named Barnaby Quill", "Barnaby", "he", "his"),
    ("a small star that had tumbled into a wishing well", "the little star", "it", "its"),
    ("a lantern that could sing in seven languages", "the singing lantern", "it", "its"),
    ("a castle that walked about on chicken legs", "the walking castle", "it", "its"),
    ("a unicorn who was secretly afraid of rainbows", "the unicorn", "she", "her"),
    ("a troll who guarded a bridge made of gingerbread", "the troll", "he", "his"),
    ("a comet with a terrible case of the hiccups", "the comet", "it", "its"),
    ("an oak tree that grew silver keys instead of acorns", "the key tree", "it", "its"),
    ("a sea serpent who loved knitting scarves", "the sea serpent", "she", "her"),
    ("a moth princess who wore a crown of dew", "the moth princess", "she", "her"),
    ("a cloud shaped exactly like a whale", "the whale cloud", "it", "its"),
    ("a library ghost named Mortimer", "Mortimer", "he", "his"),
    ("a weather witch who kept thunder in a jam jar", "the weather witch", "she", "her"),
    ("a griffin no bigger than a teacup", "the tiny griffin", "he", "his"),
    ("a mountain that hummed whenever it was happy", "the humming mountain", "it", "its"),
    ("a scarecrow who could read the stars", "the scarecrow", "he", "his"),
    ("a phoenix who kept forgetting how to catch fire", "the phoenix", "she", "her"),
    ("an owl who ran the midnight post office", "the postmistress owl", "she", "her"),
    ("a rabbit knight in dented tin armor", "the rabbit knight", "he", "his"),
    ("a paper boat that sailed between people's dreams", "the paper boat", "it", "its"),
    ("a firefly queen with a voice like a bell", "the firefly queen", "she", "her"),
    ("a grandfather clock that could walk and talk", "the grandfather clock", "he", "his"),
    ("a kraken who was terribly shy", "the shy kraken", "she", "her"),
]

PLACES = [
    "Bramblewick",
    "Thistlefen",
    "Glimmerhollow",
    "Oakenmere",
    "Moonbarrow",
    "Cinderfall",
    "Willowmarsh",
    "Starling Cove",
    "Puddingstone",
    "Frostmantle",
    "Lanternbridge",
    "Honeyvale",
    "the Mistral Peaks",
    "Dunmire",
    "Saffron Hollow",
    "Kettleburn",
    "Velvet Reach",
    "Quillford",
    "Ashgrove",
    "Tumbleweed Tor",
    "Nettlecombe",
    "the Isle of Murmurs",
    "Copperkettle",
    "Larkspur Down",
]

OPENINGS = [
    "Long ago, in the misty valley of {place}, there lived {P}.",
    "High above {place}, where the clouds were stitched together with silver thread, lived {P}.",
    "Nobody in {place} believed in magic until the evening {P} knocked on the baker's door.",
    "Every hundred years, {P} woke up beneath the hills of {place}.",
    "On the far side of the Glass Sea lies {place}, and that is where {P} made a home.",
    "Once, when the stars still sang out loud, {P} wandered into {place}.",
    "The story begins in {place}, where {P} kept watch over a field of whispering tulips.",
    "In the kingdom of {place}, where the rivers ran uphill, {P} was the only one who knew why.",
    "Deep in the Whispering Forest beyond {place} lived {P}.",
    "Before the mountains had names, {P} roamed the hills around {place}, looking for a friend.",
    "There was once {P}, and {pr} lived at the very edge of {place}, where the map simply stopped.",
    "If you ever visit {place}, ask the innkeeper about {P}.",
    "At the bottom of a lake near {place}, under a roof of lily pads, lived {P}.",
    "Many winters ago, {P} arrived in {place} riding on the back of a snowstorm.",
]

# (problem, resolution): each resolution answers its own problem.
PROBLEMS = [
    (
        "One morning {p} discovered that every color in {place} had drained away into a single grey puddle.",
        "With one enormous sneeze of glitter, {p} broke the spell, and color came pouring back into every roof and flower.",
    ),
    (
        "But one winter the stars stopped twinkling, and {p} set out to learn why.",
        "{Pr} found the stars asleep in a hammock of fog, and a single lullaby sung backwards woke them all.",
    ),
    (
        "One night {p} lost {pos} voice, and without it the tides forgot when to turn.",
        "A choir of seashells lent {p} their echo, and by dawn the tides were rolling in and out again.",
    ),
    (
        "When a grumpy storm giant stole the sun's favorite hat, {p} volunteered to get it back.",
        "{Pr} challenged the giant to a riddle contest, won with a riddle about teacups, and carried the hat home at sunrise.",
    ),
    (
        "Then came the Year of Endless Tuesdays, when time got stuck and nobody could reach Wednesday.",
        "{Pr} oiled the great cogs under the town clock with honey and moonlight, and at last Wednesday arrived, a little sticky but on time.",
    ),
    (
        "A riddle carved in moonlight appeared on the castle gate, and no one in {place} could solve it.",
        "After three days of thinking, {p} whispered the answer, which was simply an echo, and the gate swung open onto a garden of glass roses.",
    ),
    (
        "The enchanted well in the town square began to sneeze out golden frogs, hundreds every hour.",
        "{Pr} taught the frogs to sing in harmony, and the well was so soothed by their music that it stopped sneezing for good.",
    ),
    (
        "A dragon-sized hiccup shook the mountains, and every bell in {place} rang at once.",
        "{Pr} fed the mountain a spoonful of starlight syrup, and the hiccups faded into a contented rumble.",
    ),
    (
        "The north wind was trapped inside a bottle by a greedy merchant who sold breezes by the spoonful.",
        "{Pr} swapped the bottle for a jar of cloud-cream while the merchant slept, and the freed wind carried everyone's kites to the moon and back.",
    ),
    (
        "All the shadows in {place} ran away on the same afternoon, leaving people flat and confused.",
        "{Pr} lit a lantern of friendship at the town gate, and one by one the shadows crept back, embarrassed but glad to be home.",
    ),
    (
        "A sleeping volcano began snoring so loudly that the pies in {place} refused to rise.",
        "{Pr} knitted the volcano a nightcap of fog, and it slept so peacefully that every pie in town puffed up golden.",
    ),
    (
        "The last seed of the Moon Orchard was stolen by a flock of mischievous crows.",
        "{Pr} offered the crows a shining button for the seed, they agreed, and by spring the orchard glowed silver again.",
    ),
    (
        "The rainbow bridge between the two halves of {place} cracked right down the middle.",
        "{Pr} patched the crack with ribbons of sunset, and the bridge shone brighter than it ever had before.",
    ),
    (
        "The queen's dreams had been carried off by a sly fog, and she could not sleep a wink.",
        "{Pr} sailed through the fog, gathered the dreams in a net of spider silk, and tucked them back under the queen's pillow.",
    ),
    (
        "The ocean forgot how to be salty, and the fish grew bored of the sweet water.",
        "{Pr} borrowed tears of laughter from a hundred clowns and stirred them into the sea, which was salty and cheerful ever after.",
    ),
    (
        "A curse made every cake in {place} taste of old socks.",
        "{Pr} baked a single cupcake with a pinch of kindness, and when the witch who cast the curse tasted it, she laughed so hard the curse fell off.",
    ),
    (
        "The clock tower's hands flew away one night like a pair of swallows.",
        "{Pr} followed them south, convinced them that time was worth keeping, and flew home with them before the first frost.",
    ),
    (
        "A lonely iceberg drifted into the harbor and froze all the boats in place.",
        "{Pr} told the iceberg stories until it laughed, and its laughter melted it into a warm, sparkling lagoon.",
    ),
    (
        "The fireflies of {place} lost their glow after a terrible thunderstorm.",
        "{Pr} climbed the tallest chimney, caught a thread of lightning, and shared a spark with every firefly in town.",
    ),
    (
        "The book of every story ever told fell open in the wind, and its words began blowing away.",
        "{Pr} chased the flying words with a butterfly net and stitched them back onto the pages, only slightly out of order.",
    ),
    (
        "A hungry fog started eating the letters off every sign in {place}.",
        "{Pr} offered the fog a feast of old crossword puzzles, and it drifted away full, fat and polite.",
    ),
    (
        "The seven-league boots of the royal messenger ran off by themselves and would not come back.",
        "{Pr} tempted them home with a trail of the softest moss in the kingdom, and they never wandered again.",
    ),
    (
        "Every umbrella in {place} flew off on the same rainy morning and joined a flock of geese heading south.",
        "{Pr} sang the umbrellas a song about puddles and cozy hallways, and they fluttered home in a long, dripping line.",
    ),
    (
        "The sun overslept for nine days, and the roosters of {place} went hoarse trying to wake it.",
        "{Pr} climbed a ladder of moonbeams and tickled the sun's nose with a feather until it yawned and rose, blushing pink.",
    ),
    (
        "A pack of runaway snowmen marched into the summer fair and refused to melt.",
        "{Pr} invited them to a lemonade party on the shady side of the hill, and they agreed to come back only in December.",
    ),
    (
        "The stars in the Great Bear constellation slipped out of place and spelled a rude word across the sky.",
        "{Pr} nudged each star back into position with a long silver broom, and the bear twinkled gratefully.",
    ),
    (
        "The music box that kept the seasons turning had wound down, and autumn would not end.",
        "{Pr} found the tiny golden key in a squirrel's winter store, wound the box, and winter arrived that very evening.",
    ),
    (
        "A goblin tax collector demanded one laugh from every house, and soon nobody in {place} had any left.",
        "{Pr} told the goblin a joke so silly that he laughed all the laughs back out, and they scattered home like sparrows.",
    ),
    (
        "The wishing well of {place} began granting wishes backwards, so every cake wished for turned into a cabbage.",
        "{Pr} dropped a mirror into the well, the wishes bounced the right way round, and the cabbages became cakes again.",
    ),
    (
        "A mischievous breeze stole the names of all the flowers, and nobody knew what to call them.",
        "{Pr} chased the breeze up a sunflower stalk and made it promise to return every name before the bees woke up.",
    ),
    (
        "The moon's reflection got stuck in the village pond and could not get back into the sky.",
        "{Pr} gently lifted the reflection with a fishing net spun from starlight and hung it back where it belonged.",
    ),
    (
        "An army of marching teaspoons declared war on the forks of {place}.",
        "{Pr} organized a grand peace banquet of soup and cake, and the teaspoons and forks discovered they needed each other.",
    ),
    (
        "The giant who held up the edge of the sky needed a holiday, and the clouds began to sag.",
        "{Pr} propped the sky up with a thousand kite strings while the giant went fishing, and the clouds were never so tidy.",
    ),
    (
        "A storm of forgotten memories rained down on {place}, and everyone began remembering other people's birthdays.",
        "{Pr} collected the memories in teacups and returned each one to its owner by moonlight, right on time for every party.",
    ),
    (
        "The stairway to the cloud kingdom folded itself up like a paper fan and hid.",
        "{Pr} played hide and seek with the staircase for a whole afternoon, found it behind a rainbow, and coaxed it open again.",
    ),
    (
        "Somebody stole the echo from Echo Canyon, and now the canyon felt dreadfully lonely.",
        "{Pr} shouted a kind hello into the canyon every morning until a brand new echo grew, shy at first but soon loud and proud.",
    ),
    (
        "The lighthouse at {place} fell in love with a passing ship and wandered out to sea after it.",
        "{Pr} rowed out with a letter of advice, and the lighthouse came home, promising to write to the ship instead.",
    ),
    (
        "A bad-tempered thundercloud parked itself over the royal picnic and would not budge.",
        "{Pr} offered the thundercloud a slice of lemon cake, and it rained only a polite little drizzle before drifting off content.",
    ),
]

HELPERS = [
    "Along the way {pr} met a fox made of clockwork gears who knew every secret path.",
    "{Pr} crossed a bridge woven from spider silk and rainbow light.",
    "A flock of paper cranes offered to carry {p} over the Sleeping Mountains.",
    "An old tortoise with a lantern on its shell told {p} to follow the sound of silver bells.",
    "A talking teacup rode along in {pos} pocket, giving terrible advice in a very confident voice.",
    "{Pr} rode a sled pulled by six polite penguins across the frozen Sea of Sighs.",
    "On the way, a family of mushrooms lent {p} an umbrella that could also fly.",
    "A retired sea dragon gave {p} a map drawn on the back of a fish scale.",
    "{Pr} followed a river of warm cocoa until it ended at a door in the side of a hill.",
    "A wise goat who lived on top of a rainbow pointed the way with one hoof.",
    "A troupe of dancing candles lit the path through the Forest of Long Shadows.",
    "{Pr} borrowed a pair of wings from a sleepy bat who promised not to need them until dusk.",
    "A moonbeam slid down the chimney and offered to be {pos} guide for one night only.",
    "The wind, who owed {p} a favor, whistled directions through the keyholes of every door.",
]

TWISTS = [
    "At the top of the tallest tower {pr} found a tiny door that only opened for those who laughed.",
    "There, a sleepy giant handed {p} a seed that glowed like a coal.",
    "Inside a hollow pumpkin sat an owl wearing spectacles, who had been expecting {p} for three hundred years.",
    "The answer, it turned out, was hidden inside an ordinary-looking walnut.",
    "A mirror in the cave showed not {pos} reflection but a map of tomorrow.",
    "Every step {pr} took made a flower bloom, so the path home was easy to follow.",
    "A song drifted up from under the floorboards, and {p} knew at once it was a clue.",
    "Halfway there, the moon leaned down and whispered a secret word.",
    "In the middle of the desert stood a teapot as tall as a lighthouse, steaming with purple mist.",
    "Then a door appeared in the trunk of a birch tree, exactly where no door should be.",
]

ENDINGS = [
    "To this day, if you listen closely on a clear night, you can still hear {p} humming over {place}.",
    "From then on, the people of {place} left a cup of warm cocoa on their windowsills every midwinter, just in case.",
    "Ever since, the tulips of {place} have bloomed in stripes.",
    "And that is why, in {place}, nobody ever laughs at a small hero.",
    "{p_cap} went home, had a very long nap, and dreamed of toast with marmalade.",
    "The children of {place} still sing a song about it, though they always get the second verse wrong.",
    "After that, even the crows tipped their hats whenever {p} flew by.",
    "And if the moon looks like it is smiling tonight, now you know why.",
    "{p_cap} kept one golden thread as a souvenir, tucked safely under {pos} pillow.",
    "Some say it never happened, but the glittering puddles in {place} say otherwise.",
]

# ---------------------------------------------------------------------------------------------------------------
# Finance–Medical: finance questions (label 0). Same block format as HOWDY_SUBJECTS.
# ---------------------------------------------------------------------------------------------------------------

FINANCE_SUBJECTS = """
@budgeting
? What is the 50/30/20 budgeting rule?
? How does the 50/30/20 budget work?
? Is the 50/30/20 rule a good way to split my paycheck?
- The 50/30/20 rule splits after-tax income into about 50 percent for needs, 30 percent for wants, and 20 percent for savings and debt repayment.
- Needs are essentials such as rent, utilities, groceries, insurance and minimum loan payments.
- Wants include dining out, streaming services, hobbies and travel.
- The 20 percent goes toward an emergency fund, retirement contributions and paying down debt faster.
- In high-cost cities, needs often exceed half of income, so treat the percentages as a starting point rather than a strict law.
- The rule is popular because it is simple enough to follow without tracking every purchase.

? How do I make a monthly budget for the first time?
? What are the steps to create a personal budget?
? I have never budgeted before. Where do I start?
- Start by writing down your monthly take-home pay and then list every regular expense.
- Look at two or three months of bank and card statements to see where money actually goes.
- Separate fixed costs like rent from variable costs like groceries and entertainment.
- Give every dollar a job, including savings, so income minus planned spending equals zero.
- Review the budget at the end of each month and adjust categories that were unrealistic.
- Budgeting apps can help, but a simple spreadsheet works just as well.

? What is zero-based budgeting?
? How is a zero-based budget different from a normal budget?
? Does zero-based budgeting mean I spend everything I earn?
- In a zero-based budget you assign every unit of income to a category until income minus allocations equals zero.
- It does not mean spending everything: savings, investments and debt payments are categories too.
- The method forces you to justify each expense each month instead of copying last month's numbers.
- It works well for people with irregular spending who want tight control.
- Many people use a separate buffer category for surprises so the plan does not break.

? How can I stop overspending on groceries?
? What are practical ways to cut my food budget?
? Why is my grocery bill so high every month?
- Plan meals for the week and shop from a list, which cuts impulse purchases.
- Compare unit prices on shelf labels rather than package prices.
- Store brands are often made to similar standards as name brands for less money.
- Buying staples like rice, oats and beans in bulk lowers the cost per meal.
- Cooking larger batches and freezing portions reduces takeout on busy nights.
- Track grocery spending for a month to see which categories drive the total.

? How do I budget with an irregular income?
? I'm a freelancer with unpredictable pay. How should I budget?
? What budgeting method works when income changes every month?
- Base your budget on a conservative estimate, such as your lowest monthly income from the past year.
- In good months, put the extra into a buffer account that tops up lean months.
- Pay yourself a steady salary from that buffer account into your main checking account.
- Set aside a share of each payment for taxes right away if no employer withholds them.
- Prioritize essentials and savings first, then let flexible spending rise and fall with income.

? What is lifestyle inflation?
? How do I avoid lifestyle creep after a raise?
? Why do I never seem to have more money even though I earn more?
- Lifestyle inflation, or lifestyle creep, is when spending rises every time income rises, so savings never grow.
- A common defense is to save at least half of every raise before you get used to spending it.
- Automate the higher savings contribution on the day the raise starts.
- Upgrade deliberately, choosing one or two improvements that matter to you rather than everything at once.
- Tracking your savings rate, not just your income, shows whether you are actually getting ahead.

? How much should I spend on rent?
? What percentage of my income should go to housing?
? Is it bad to spend half my salary on rent?
- A common guideline is to keep rent at or below about 30 percent of gross income.
- Spending half your income on rent leaves little room for saving, emergencies and other goals.
- In expensive cities the guideline is hard to meet, so focus on whether the rest of your budget still works.
- Remember to count utilities, renter's insurance and commuting costs when comparing places.
- A cheaper apartment farther away may not save money if transport costs rise a lot.

@saving
? How big should my emergency fund be?
? How many months of expenses should I keep in savings?
? What is an emergency fund and why do I need one?
- A common guideline is to keep three to six months of essential expenses in an emergency fund.
- It covers surprises such as job loss, car repairs or urgent travel without forcing you into debt.
- People with irregular income or a single income in the household may want closer to six months or more.
- Keep the fund in a safe, easily accessible place such as a high-yield savings account.
- Start small; even one month of expenses provides a meaningful cushion.
- Refill the fund after you use it before returning to other goals.

? What is a high-yield savings account?
? Are online high-yield savings accounts safe?
? Why should I move my savings to a high-yield account?
- A high-yield savings account pays a noticeably higher interest rate than a typical savings account at a traditional bank.
- Online banks can often pay more because they have lower costs than banks with branches.
- In the United States, accounts at FDIC-insured banks are protected up to 250,000 dollars per depositor, per bank, per ownership category.
- Rates are variable and can fall when central bank rates fall.
- They are a good home for an emergency fund or short-term savings goals.

? How can I save money automatically?
? What does it mean to pay yourself first?
? I never have money left to save at the end of the month. What should I do?
- Paying yourself first means moving money into savings as soon as you are paid, before spending on anything else.
- Set up an automatic transfer from checking to savings for the day after payday.
- Because the money leaves before you see it, you adapt your spending to what is left.
- Start with a small percentage and increase it every few months.
- Workplace retirement plans that deduct contributions straight from your paycheck work the same way.

? What is a sinking fund?
? How do sinking funds help with budgeting?
? Should I save separately for annual expenses like car insurance?
- A sinking fund is money you set aside gradually for a known future expense, such as car insurance, holidays or a new laptop.
- Divide the expected cost by the number of months until you need it and save that amount monthly.
- A sinking fund turns a large annual bill into manageable monthly pieces.
- It also keeps planned expenses from draining your emergency fund.
- Many banks let you open several labeled savings buckets to keep sinking funds separate.

? How do I save for a house down payment?
? What is the best way to save for buying a home?
? Where should I keep money I'm saving for a down payment?
- Decide on a target price range and down payment percentage, then work out a monthly savings goal.
- Money needed within a few years is usually best kept in safe places like high-yield savings or certificates of deposit rather than stocks.
- Remember closing costs, moving expenses and an emergency cushion on top of the down payment.
- Some first-time buyer programs offer assistance or lower down payment requirements.
- Cutting a large recurring expense, like a car payment, can speed up saving more than many small cuts.

? What is a certificate of deposit?
? How does a CD work at a bank?
? Are CDs a good place to put savings?
- A certificate of deposit is a bank deposit that pays a fixed interest rate for a set term, such as six months or five years.
- In exchange for the fixed rate, you agree not to withdraw the money before the term ends.
- Withdrawing early usually triggers a penalty, often several months of interest.
- CDs suit money you know you will not need until a specific date.
- Building a CD ladder, with CDs maturing at different times, gives regular access to part of the money.

@credit
? How is a credit score calculated?
? What factors affect my credit score the most?
? Why did my credit score drop?
- In the widely used FICO model, payment history and amounts owed are the two biggest factors.
- Paying every bill on time matters most, since late payments can stay on a report for years.
- Amounts owed include credit utilization, the share of your available revolving credit that you are using.
- The length of credit history, new credit applications and the mix of credit types also play smaller roles.
- A sudden drop often comes from a missed payment, a high card balance being reported, or a new hard inquiry.

? What is credit utilization?
? How much of my credit card limit should I use?
? Does using a lot of my credit limit hurt my score?
- Credit utilization is the percentage of your available revolving credit that you are currently using.
- Many lenders like to see utilization below about 30 percent, and lower is generally better.
- Utilization is usually calculated from the balance on your statement, even if you pay it in full afterward.
- Paying down the balance before the statement closes can lower the reported utilization.
- Because it is based on current balances, utilization can recover quickly once balances fall.

? How can I build credit with no credit history?
? What's the best first step to build a credit score from scratch?
? I'm a student with no credit. How do I start?
- A secured credit card, backed by a cash deposit, is a common first step to build credit.
- Becoming an authorized user on a family member's well-managed card can also help.
- Use the card for a small regular bill and pay it off in full every month.
- Credit-builder loans from some credit unions report your payments to the credit bureaus.
- After six months to a year of on-time payments, you may qualify for a regular card.

? What is the difference between a hard inquiry and a soft inquiry?
? Does checking my own credit score lower it?
? Will applying for a loan hurt my credit score?
- A hard inquiry happens when a lender checks your credit because you applied for new credit, and it can lower your score slightly for a while.
- A soft inquiry, such as checking your own score or a pre-approval offer, does not affect your score.
- Hard inquiries stay on your report for about two years, but their effect usually fades within a year.
- When shopping for a mortgage or auto loan, several inquiries within a short window are often counted as one.
- Avoid applying for many new cards in a short period.

? How do I check my credit report for free?
? How often should I look at my credit report?
? What should I look for on my credit report?
- In the United States, you can get free credit reports from Equifax, Experian and TransUnion through AnnualCreditReport.com.
- Check for accounts you do not recognize, incorrect late payments and wrong personal information.
- Errors can be disputed directly with the credit bureau, which must investigate.
- Reviewing your reports at least once a year helps catch identity theft early.
- Medical debt rules have changed in recent years, and many paid medical collections no longer appear on reports.

? What is a credit freeze?
? Should I freeze my credit after a data breach?
? How is a credit freeze different from a fraud alert?
- A credit freeze blocks most lenders from seeing your credit report, which makes it hard for a thief to open accounts in your name.
- In the United States, freezing and unfreezing your credit at each bureau is free.
- You can temporarily lift the freeze when you apply for a loan or a new card.
- A fraud alert is lighter: lenders can still see your report but should verify your identity first.
- A freeze does not affect your existing accounts or your credit score.

@debt
? What is the difference between the debt avalanche and debt snowball methods?
? Should I pay off my smallest debt or my highest-interest debt first?
? Which debt payoff strategy is better, snowball or avalanche?
- The avalanche method pays extra toward the debt with the highest interest rate first, which saves the most money.
- The snowball method pays off the smallest balance first, which gives quick wins and can boost motivation.
- With both methods you keep making minimum payments on every other debt.
- When one debt is gone, roll its payment into the next one on the list.
- The best method is the one you will stick with until every debt is paid.

? Is it a good idea to consolidate credit card debt?
? How does a debt consolidation loan work?
? Should I use a balance transfer card to pay off debt?
- Debt consolidation combines several debts into one loan or card, ideally at a lower interest rate.
- A balance transfer card may offer a low or zero percent introductory rate, usually with a transfer fee of a few percent.
- Consolidation only helps if you stop adding new debt to the old cards.
- Check when a promotional rate ends and what the rate becomes afterward.
- Compare the total cost, including fees, not just the monthly payment.

? How does credit card interest work?
? What is APR on a credit card?
? Why do I pay interest on my credit card?
- APR is the annual percentage rate charged on balances you carry from month to month.
- Most cards charge interest daily based on your average daily balance, using the APR divided by 365.
- If you pay the full statement balance by the due date, you usually pay no interest on purchases.
- Paying only the minimum keeps most of the balance accruing interest, so debt can last for years.
- Cash advances often have a higher APR and no grace period.

? What happens if I miss a credit card payment?
? I forgot to pay my credit card bill. What now?
? How bad is one late payment?
- Pay as soon as you notice; a payment made within a few days may only trigger a late fee.
- Payments that are 30 or more days late are typically reported to the credit bureaus and can lower your score significantly.
- Call the issuer and ask whether they will waive the late fee, especially if you have a good history.
- Missing payments can also trigger a higher penalty interest rate on some cards.
- Setting up autopay for at least the minimum payment prevents accidental misses.

? How do student loan repayment plans work?
? Should I pay off student loans early or invest?
? What are my options for repaying student loans?
- Most student loan systems offer a standard plan with fixed payments and alternative plans based on income or longer terms.
- Income-driven plans lower monthly payments but can increase total interest paid over time.
- Paying early makes sense for high-interest loans, while low-rate loans may be worth paying on schedule while you invest.
- Employer retirement matching should usually come before extra loan payments.
- Refinancing federal loans into private loans can lower the rate but gives up federal protections.

? Can I negotiate a hospital bill?
? How do I deal with large medical bills I can't afford?
? What should I do about medical debt?
- Yes, hospital bills can often be negotiated, especially if you ask early.
- Request an itemized bill and check it for duplicate charges or services you did not receive.
- Ask whether the hospital offers financial assistance or charity care, which many nonprofit hospitals must provide.
- Most hospitals will set up an interest-free payment plan if you call before the account goes to collections.
- Avoid putting medical bills on a high-interest credit card if a payment plan is available.

@banking
? What is the difference between a checking account and a savings account?
? Do I need both a checking and a savings account?
? Why have a savings account if I already have checking?
- A checking account is built for everyday spending, with a debit card, bill pay and unlimited transactions.
- A savings account is built for holding money and usually pays more interest.
- Keeping savings separate makes it less tempting to spend money set aside for goals.
- Some savings accounts limit the number of withdrawals per month.
- Linking the two lets you move money quickly when needed.

? What is overdraft protection?
? Should I opt out of overdraft coverage?
? Why did my bank charge me an overdraft fee?
- An overdraft happens when you spend more than your account balance, and the bank covers the difference, often for a fee.
- Overdraft fees can be large relative to the small purchases that trigger them.
- Some banks let you link a savings account to cover shortfalls for a smaller fee or none.
- Opting out of overdraft coverage for debit card purchases means those transactions are declined instead of charged a fee.
- Low-balance alerts on your phone help you avoid overdrafts in the first place.

? What is a credit union?
? Is a credit union better than a bank?
? How are credit unions different from banks?
- A credit union is a nonprofit financial cooperative owned by its members.
- Because profits go back to members, credit unions often offer lower loan rates and fewer fees.
- Membership is usually tied to where you live or work or to an association.
- In the United States, deposits at federally insured credit unions are protected by the NCUA, similar to FDIC insurance at banks.
- Large banks may offer more branches, ATMs and digital features.

? How do wire transfers work?
? Is it safe to send money by wire transfer?
? What is the difference between a wire transfer and an ACH transfer?
- A wire transfer moves money directly between banks, often on the same day, and is usually irreversible.
- ACH transfers are batched electronic payments, slower but usually cheap or free.
- Because wires are hard to reverse, scammers often ask for them.
- Verify any wire instructions by phone using a number you already know, especially for property purchases.
- International wires may include fees from intermediary banks and an exchange rate markup.

? How can I avoid bank fees?
? What fees should I watch out for at my bank?
? Why am I paying a monthly maintenance fee?
- Common bank fees include monthly maintenance fees, overdraft fees, out-of-network ATM fees and paper statement fees.
- Many banks waive the monthly fee if you keep a minimum balance or set up direct deposit.
- Online banks and credit unions often have no monthly fees at all.
- Use your bank's ATM network or an account that reimburses ATM fees.
- Review your statements for a few months to spot fees you did not expect.

@investing
? What is an index fund?
? Why do people recommend index funds for beginners?
? How does an index fund work?
- An index fund is a mutual fund or ETF that tracks a market index, such as the S&P 500, by holding the securities in it.
- Because it does not pay managers to pick stocks, it usually has very low fees.
- Owning an index fund spreads your money across many companies, which reduces the risk of any single company failing.
- Over long periods, many actively managed funds have failed to beat their benchmark index after fees.
- Index funds are a common core holding for long-term investors.

? What is the difference between stocks and bonds?
? Should I invest in stocks or bonds?
? How do stocks and bonds make money?
- A stock is a share of ownership in a company, while a bond is a loan you make to a company or government.
- Stocks can grow through rising prices and dividends but can fall sharply in the short term.
- Bonds pay interest and tend to be less volatile, but their long-term returns are usually lower.
- Many portfolios combine both, with more stocks for long time horizons and more bonds as goals get closer.
- Bond prices usually fall when interest rates rise.

? What is diversification in investing?
? Why shouldn't I put all my money in one stock?
? How diversified should my portfolio be?
- Diversification means spreading investments across many assets so that one bad outcome does not sink the whole portfolio.
- A single company can go bankrupt, but a broad fund holding hundreds of companies rarely falls to zero.
- Diversify across asset classes, such as stocks and bonds, and across regions and sectors.
- Owning several funds that hold the same stocks is not real diversification.
- Diversification reduces risk but cannot eliminate losses in a broad market decline.

? What is an ETF?
? How is an ETF different from a mutual fund?
? Are ETFs good for beginners?
- An ETF, or exchange-traded fund, is a basket of investments that trades on a stock exchange like a single stock.
- Mutual funds are priced once a day after the market closes, while ETF prices change throughout the trading day.
- Many ETFs track indexes and have low expense ratios.
- ETFs are often more tax-efficient than comparable mutual funds in taxable accounts.
- Beginners can use broad-market ETFs to get instant diversification with a single purchase.

? What is dollar-cost averaging?
? Should I invest a lump sum or spread it out over time?
? Does investing a fixed amount every month make sense?
- Dollar-cost averaging means investing a fixed amount at regular intervals regardless of price.
- You automatically buy more shares when prices are low and fewer when they are high.
- It reduces the risk of investing everything right before a decline and takes emotion out of timing.
- Studies suggest a lump sum invested immediately has often done better on average, because markets tend to rise over time.
- For most people investing from each paycheck, dollar-cost averaging happens naturally.

? What is an expense ratio?
? Why do fund fees matter so much?
? Is a 1 percent fund fee high?
- An expense ratio is the annual fee a fund charges, expressed as a percentage of your investment.
- A fund with a 1 percent expense ratio costs 10 dollars a year for every 1,000 dollars invested.
- Fees compound over time, so small differences can add up to large amounts over decades.
- Broad index funds often charge a small fraction of a percent.
- The fee is taken from the fund's assets, so you never see a separate bill.

? What are dividends?
? How do dividend stocks pay investors?
? Should I reinvest my dividends?
- A dividend is a payment a company makes to shareholders, usually from its profits.
- Many companies pay dividends quarterly, and the amount is set by the board of directors.
- Reinvesting dividends buys more shares, which can compound returns significantly over time.
- Dividends are not guaranteed; companies can cut them in hard times.
- In taxable accounts dividends are usually taxed in the year they are paid, even if reinvested.

? What is my risk tolerance and how do I figure it out?
? How do I choose how much risk to take when investing?
? How should my age affect my investments?
- Risk tolerance is how much short-term loss you can accept, both financially and emotionally, in pursuit of higher returns.
- Your time horizon matters: money needed in 30 years can ride out downturns better than money needed next year.
- Ask yourself how you would react if your portfolio dropped 30 percent in a year.
- A common approach is to hold more stocks when young and gradually shift toward bonds as goals approach.
- Target-date funds do this shifting automatically.

? Should I invest in healthcare stocks?
? Is the healthcare sector a good long-term investment?
? How do pharmaceutical stocks behave in the market?
- Healthcare is one of the standard stock market sectors and includes drug makers, device companies, insurers and hospital operators.
- The sector is often seen as defensive, because people need care whatever the economy is doing.
- Individual drug companies can swing sharply on clinical trial results or patent expirations.
- A broad healthcare index fund spreads that risk across many companies.
- A total market index fund already includes healthcare companies, so an extra sector fund increases your concentration.

? What is a bear market?
? What should I do when the stock market crashes?
? Should I sell my investments during a market downturn?
- A bear market is commonly defined as a fall of 20 percent or more from a recent high.
- Selling after a big drop locks in losses and risks missing the recovery, which often starts unexpectedly.
- Historically, broad markets have recovered from every bear market, though some recoveries took years.
- Having an emergency fund means you will not be forced to sell investments at a bad time.
- Continuing to invest during downturns buys shares at lower prices.

? What is compound interest?
? Why is compound interest so powerful?
? How does compounding help my savings grow?
- Compound interest is interest earned on both your original money and the interest it has already earned.
- Over time, the growth accelerates because each year's interest is calculated on a larger balance.
- The rule of 72 gives a quick estimate: divide 72 by the annual rate to get the years needed to double your money.
- Starting early matters more than almost anything else, because compounding needs time.
- The same principle works against you on debt, where unpaid interest is added to the balance.

? What is a robo-advisor?
? Are robo-advisors worth using?
? How do automated investing services work?
- A robo-advisor is an online service that builds and manages an investment portfolio for you using algorithms.
- You answer questions about goals and risk tolerance, and it picks a mix of low-cost funds.
- It automatically rebalances the portfolio and sometimes harvests tax losses.
- Fees are usually lower than a traditional financial advisor's but higher than managing funds yourself.
- Robo-advisors suit people who want a hands-off approach without much complexity.

? What is rebalancing a portfolio?
? How often should I rebalance my investments?
? Why does my portfolio need rebalancing?
- Rebalancing means adjusting your holdings back to your target mix after market moves push it off course.
- If stocks rise a lot, they become a bigger share of the portfolio than you intended, increasing risk.
- Many investors rebalance once a year or when an allocation drifts more than five percentage points.
- Directing new contributions into the underweight asset is a low-cost way to rebalance.
- In taxable accounts, selling winners to rebalance can trigger capital gains tax.

@markets
? What does the S&P 500 measure?
? What is the S&P 500 index?
? Why do people talk about the S&P 500 so much?
- The S&P 500 is a stock market index that tracks 500 large companies listed in the United States.
- It is weighted by market value, so the biggest companies have the most influence on its movements.
- It is widely used as a benchmark for the overall US stock market.
- Many index funds and ETFs are designed to match its performance.
- The index covers companies across sectors such as technology, healthcare, finance and energy.

? Why do interest rates affect the stock market?
? How do central bank rate hikes affect markets?
? What happens to stocks when interest rates go up?
- Higher interest rates make borrowing more expensive for companies and consumers, which can slow growth and profits.
- Higher rates also make bonds and savings more attractive compared with stocks.
- Future company earnings are worth less today when rates are higher, which tends to weigh on stock valuations.
- Growth companies whose profits lie far in the future are often the most sensitive.
- Markets often react to expectations about rate changes before the central bank acts.

? What is inflation?
? How does inflation affect my savings?
? Why do prices keep going up every year?
- Inflation is the general rise in prices over time, which means each unit of money buys a little less.
- Many central banks aim for low, stable inflation of around 2 percent per year.
- Cash sitting in an account that pays less than inflation loses purchasing power.
- Investments such as stocks have historically outpaced inflation over long periods, though not every year.
- Some governments issue inflation-protected bonds whose value rises with prices.

? What is a recession?
? How should I prepare my finances for a recession?
? What happens to jobs and markets during a recession?
- A recession is a significant, widespread decline in economic activity lasting more than a few months.
- Unemployment usually rises and many companies cut spending and hiring.
- A solid emergency fund is the best preparation for a possible job loss.
- Paying down high-interest debt reduces monthly obligations before times get tight.
- Stock markets often fall ahead of recessions and sometimes begin recovering before they officially end.

? What is a stock split?
? Does a stock split make a share cheaper to own?
? Why do companies split their stock?
- In a stock split, a company divides each existing share into several new shares, lowering the price per share without changing the company's total value.
- For example, in a two-for-one split, one share worth 200 becomes two shares worth 100 each.
- Your total investment value stays the same immediately after the split.
- Companies often split shares to make them easier for small investors to buy.
- With fractional shares now widely available, splits matter less than they used to.

? What is market capitalization?
? What do large-cap and small-cap mean?
? How is a company's market cap calculated?
- Market capitalization is a company's share price multiplied by its number of shares outstanding.
- Large-cap companies are generally worth more than about 10 billion dollars, while small-cap companies are much smaller.
- Small-cap stocks can grow faster but tend to be more volatile.
- Market cap measures how the market values the company's equity, not its revenue or profits.
- Many indexes weight companies by market capitalization.

? What is a price-to-earnings ratio?
? How do I use the P/E ratio to evaluate a stock?
? Is a high P/E ratio bad?
- The price-to-earnings ratio compares a company's share price with its earnings per share.
- A high P/E suggests investors expect strong future growth, while a low one can signal a bargain or a troubled business.
- P/E ratios are most useful when comparing companies in the same industry.
- Companies with no earnings do not have a meaningful P/E ratio.
- No single ratio tells you whether a stock is a good investment.

? What is cryptocurrency and is it a good investment?
? Should I put my savings into Bitcoin?
? How risky is investing in crypto?
- Cryptocurrencies are digital assets recorded on blockchains, with no central bank backing their value.
- Prices can swing dramatically, sometimes losing more than half their value in months.
- Many financial planners suggest limiting speculative assets like crypto to a small share of a portfolio.
- Never invest money in crypto that you need for emergencies or near-term goals.
- Use reputable platforms and be wary of schemes promising guaranteed returns.

@retirement
? What is a 401(k)?
? How does a 401(k) plan work?
? Should I contribute to my employer's 401(k)?
- A 401(k) is an employer-sponsored retirement account in the United States that lets you invest part of your paycheck.
- Traditional contributions reduce your taxable income now, and withdrawals are taxed in retirement.
- Many employers match part of your contributions, which is essentially free money.
- Contributing at least enough to get the full match is one of the most common pieces of financial advice.
- Withdrawals before age 59 and a half usually incur taxes plus a 10 percent penalty, with some exceptions.

? What is the difference between a Roth IRA and a traditional IRA?
? Should I choose a Roth or traditional retirement account?
? How are Roth IRA withdrawals taxed?
- With a traditional IRA, contributions may be tax-deductible now and withdrawals are taxed later.
- With a Roth IRA, you contribute after-tax money and qualified withdrawals in retirement are tax-free.
- A Roth tends to make sense if you expect to be in a higher tax bracket in retirement.
- Roth IRAs have income limits for direct contributions, while traditional IRAs do not limit contributions by income.
- Roth contributions, but not earnings, can generally be withdrawn at any time without tax or penalty.

? How much do I need to save for retirement?
? What is the 4 percent rule?
? How big should my retirement nest egg be?
- The 4 percent rule suggests you can withdraw about 4 percent of your savings in the first year of retirement and adjust for inflation afterward.
- Working backward, that means saving roughly 25 times your expected annual spending.
- If you expect to spend 40,000 dollars a year beyond pensions or social benefits, the rule points to about one million dollars.
- The rule is based on historical market returns and is a rough guideline, not a guarantee.
- Early retirees with longer horizons often use a lower withdrawal rate.

? When should I start saving for retirement?
? Is it too late to start saving for retirement at 40?
? Why does everyone say to start investing for retirement early?
- The best time to start is as early as possible, because compounding needs time.
- Someone who starts at 25 can end up with far more than someone who starts at 35 contributing the same amount each month.
- It is never too late, though; starting at 40 or 50 still makes a big difference.
- Later starters can use higher contribution limits, such as catch-up contributions for people over 50.
- Delaying retirement a few years and reducing spending also improve the picture.

? What is a target-date fund?
? Are target-date retirement funds a good choice?
? How does a 2055 target-date fund work?
- A target-date fund holds a mix of stocks and bonds that automatically becomes more conservative as the target year approaches.
- The year in its name is roughly when the investor expects to retire.
- It offers diversification and automatic rebalancing in one fund.
- Fees vary widely between providers, so compare expense ratios.
- Two funds with the same target year can hold quite different amounts of stocks.

? What happens to my 401(k) when I change jobs?
? Should I roll over my old 401(k)?
? How do I move retirement savings from an old employer?
- When you leave a job, you can usually leave the 401(k) where it is, roll it into your new employer's plan, or roll it into an IRA.
- A direct rollover moves the money between accounts without taxes or penalties.
- Cashing out usually triggers income tax plus an early withdrawal penalty if you are under 59 and a half.
- Rolling into an IRA often gives more investment choices.
- Keep track of old accounts so they are not forgotten.

? How does Social Security work?
? When should I start claiming Social Security?
? How are Social Security benefits calculated?
- Social Security is a US government program that pays retirement benefits based on your lifetime earnings record.
- Benefits are calculated from your highest 35 years of inflation-adjusted earnings.
- You can claim as early as 62, but monthly benefits are permanently reduced compared with waiting until full retirement age.
- Delaying beyond full retirement age increases the benefit until age 70.
- The best claiming age depends on health, other income and whether you are married.

? What is a pension?
? How is a pension different from a 401(k)?
? Should I take my pension as a lump sum or monthly payments?
- A traditional pension, or defined benefit plan, pays a set monthly income in retirement based on salary and years of service.
- In a 401(k), a defined contribution plan, the final amount depends on contributions and investment returns.
- With a pension, the employer bears the investment risk; with a 401(k), the employee does.
- Monthly pension payments provide income for life, while a lump sum gives flexibility but must be managed carefully.
- Compare the lump sum with what it would cost to buy a similar lifetime income.

@taxes
? Can I deduct medical expenses on my taxes?
? Are doctor bills tax deductible?
? How does the medical expense deduction work?
- In the United States, you can deduct qualified medical expenses that exceed 7.5 percent of your adjusted gross income, but only if you itemize deductions.
- Qualified expenses include payments to doctors and dentists, hospital care, prescription drugs and some health insurance premiums.
- Costs reimbursed by insurance or paid from a tax-advantaged account cannot be deducted again.
- Because most households take the standard deduction, relatively few people benefit from this deduction.
- Keep receipts and statements in case you need to document your expenses.

? What is the difference between a tax deduction and a tax credit?
? Is a tax credit better than a deduction?
? How do tax credits reduce what I owe?
- A tax deduction lowers your taxable income, while a tax credit reduces your tax bill dollar for dollar.
- A 1,000 dollar deduction for someone in a 22 percent bracket saves about 220 dollars, while a 1,000 dollar credit saves the full 1,000.
- Some credits are refundable, which means you can receive money back even if you owe no tax.
- Common credits include those for children, education and energy-efficient home improvements.
- Eligibility rules can be complex, so check the requirements carefully.

? What is a marginal tax rate?
? If I get a raise into a higher tax bracket, will I take home less?
? How do tax brackets work?
- In a progressive system, each tax rate applies only to the portion of income within its bracket.
- Moving into a higher bracket only raises the tax on the dollars above the threshold, so a raise never lowers your take-home pay because of the bracket itself.
- Your marginal rate is the rate on your last dollar of income.
- Your effective rate, total tax divided by total income, is always lower than your top marginal rate.
- Deductions and credits further change how much you actually pay.

? What is the standard deduction?
? Should I itemize deductions or take the standard deduction?
? How do I know if itemizing is worth it?
- The standard deduction is a fixed amount that reduces your taxable income without needing to list specific expenses.
- Itemizing only makes sense if your deductible expenses, like mortgage interest, state taxes and charitable gifts, add up to more than the standard deduction.
- Most taxpayers in the United States take the standard deduction.
- Tax software usually compares both options for you.
- Bunching charitable gifts into alternate years is one way some people make itemizing worthwhile.

? Do I have to pay tax on my savings account interest?
? Is bank interest taxable income?
? How is interest from a CD taxed?
- In most countries, including the United States, interest from savings accounts and CDs counts as taxable income.
- It is usually taxed at your ordinary income tax rate, not at a special lower rate.
- Banks typically send a tax form when you earn more than a small threshold of interest in a year.
- Interest earned inside retirement accounts is generally not taxed until withdrawal, or not at all for Roth accounts.
- Some government bond interest is exempt from state or local tax.

? What is a capital gains tax?
? How are investment profits taxed?
? What's the difference between short-term and long-term capital gains?
- Capital gains tax applies to the profit you make when you sell an investment for more than you paid.
- In the United States, assets held for more than a year qualify for lower long-term capital gains rates.
- Gains on assets held a year or less are taxed as ordinary income.
- Capital losses can offset gains, and some excess losses can reduce ordinary income.
- Gains inside retirement accounts are not taxed when they occur.

? What is tax-loss harvesting?
? Can I use investment losses to lower my taxes?
? How does selling losing stocks reduce taxes?
- Tax-loss harvesting means selling investments at a loss to offset capital gains elsewhere in a taxable account.
- If losses exceed gains, a limited amount can reduce ordinary income each year, with the rest carried forward.
- The US wash sale rule disallows the loss if you buy the same or a substantially identical investment within 30 days.
- Investors often replace the sold fund with a similar but not identical one to stay invested.
- Harvesting lowers taxes now but also lowers your cost basis, which can mean more tax later.

? Should I file my taxes early?
? What documents do I need to file my tax return?
? How do I prepare for tax season?
- Gather income documents such as wage statements, freelance income forms, and interest and dividend statements.
- Collect records for deductions and credits, including childcare, education costs and charitable donations.
- Filing early gets any refund sooner and reduces the risk of someone filing a fraudulent return in your name.
- Electronic filing with direct deposit is usually the fastest way to receive a refund.
- Keep copies of your return and supporting documents for several years.

? How do freelancers pay taxes?
? Do I need to pay quarterly estimated taxes?
? How much should a self-employed person set aside for taxes?
- Freelancers usually have no employer withholding tax, so they must pay estimated taxes during the year.
- In the United States, estimated payments are generally due quarterly.
- Self-employed people also pay both halves of social security and Medicare taxes, known as self-employment tax.
- Many freelancers set aside 25 to 30 percent of each payment for taxes, adjusted to their situation.
- Business expenses such as equipment and software can reduce taxable income.

? What is a W-4 form and how should I fill it out?
? Why do I owe taxes even though my employer withholds them?
? How do I adjust my paycheck withholding?
- The W-4 tells your US employer how much federal income tax to withhold from each paycheck.
- If too little is withheld, for example because of a second job or side income, you may owe tax at filing time.
- You can adjust the form any time, such as after marriage, a new child or a change in income.
- The IRS offers an online withholding estimator to help.
- A large refund means you gave the government an interest-free loan during the year.

? Are charitable donations tax deductible?
? How do I get a tax deduction for giving to charity?
? What records do I need for charitable donations?
- Donations to qualified charities can be deducted in the United States if you itemize deductions.
- Keep receipts; gifts of 250 dollars or more need a written acknowledgment from the charity.
- Donating appreciated stock can avoid capital gains tax on the increase in value.
- Gifts to individuals, political campaigns and crowdfunding for private people are generally not deductible.
- Rules differ by country, so check the local requirements.

@insurance
? What is a health insurance deductible?
? How do deductibles, copays and coinsurance work?
? What does out-of-pocket maximum mean in health insurance?
- A deductible is the amount you pay for covered care each year before your health insurance starts sharing costs.
- A copay is a fixed fee for a service, such as 30 dollars for a doctor visit.
- Coinsurance is your percentage share of costs after the deductible, such as 20 percent.
- The out-of-pocket maximum caps what you pay in a year for covered services, after which the plan pays 100 percent.
- Premiums, the monthly cost of the plan, do not count toward the deductible.

? What is a health savings account?
? How does an HSA work with a high-deductible health plan?
? Is an HSA a good way to save for medical costs?
- A health savings account lets people with a qualifying high-deductible health plan save pre-tax money for medical expenses.
- Contributions are tax-deductible, growth is tax-free, and withdrawals for qualified medical expenses are tax-free.
- Unlike a flexible spending account, HSA money rolls over from year to year and stays with you if you change jobs.
- Many HSA providers let you invest the balance in funds once it reaches a minimum.
- After age 65, withdrawals for non-medical expenses are taxed like traditional retirement account withdrawals.

? What is a flexible spending account?
? How is an FSA different from an HSA?
? What happens to unused FSA money?
- A flexible spending account is an employer benefit that lets you set aside pre-tax money for eligible health care or dependent care costs.
- Unlike an HSA, an FSA does not require a high-deductible health plan.
- FSAs generally follow a use-it-or-lose-it rule, though employers may allow a small carryover or grace period.
- Estimate expenses conservatively, such as regular prescriptions or glasses, when choosing a contribution.
- You usually cannot change your contribution mid-year unless you have a qualifying life event.

? Do I need life insurance?
? How much life insurance should I buy?
? What is the difference between term and whole life insurance?
- You generally need life insurance if someone depends on your income, such as children or a partner.
- Term life insurance covers a set period, like 20 years, and is much cheaper than permanent coverage.
- Whole life insurance lasts for life and builds cash value, but premiums are far higher.
- A rough starting point is coverage of several times your annual income, plus debts and future costs like education.
- Some term policies require a medical exam, while others ask only health questions and may cost more.

? What is disability insurance?
? Do I need long-term disability insurance?
? How does disability insurance replace income?
- Disability insurance replaces part of your income if illness or injury keeps you from working.
- Short-term policies cover weeks or months, while long-term policies can pay for years or until retirement age.
- Policies typically replace around 50 to 70 percent of income.
- Many employers offer group coverage, but it may not be enough for higher earners.
- Check how the policy defines disability, since own-occupation coverage is broader than any-occupation coverage.

? What is long-term care insurance?
? Should I buy long-term care insurance?
? How do people pay for nursing home care?
- Long-term care insurance helps pay for services like home health aides, assisted living or nursing homes.
- Regular health insurance and many government programs cover little long-term custodial care.
- Premiums are lower when you buy in your fifties than later, but they can rise over time.
- Some hybrid life insurance policies include long-term care benefits.
- Without coverage, families often pay from savings or rely on means-tested government programs.

? How can I lower my car insurance premium?
? Why is my auto insurance so expensive?
? What affects the price of car insurance?
- Car insurance prices depend on your driving record, age, location, vehicle, coverage and sometimes credit-based scores.
- Raising your deductible lowers the premium but means paying more yourself after a claim.
- Bundling home and auto policies with one insurer often brings a discount.
- Shopping around every year or two can reveal much cheaper quotes for the same coverage.
- Dropping collision coverage on an old, low-value car may be worth considering.

? Do I need renters insurance?
? What does renters insurance cover?
? Is renters insurance worth the cost?
- Renters insurance covers your belongings against events like fire or theft and includes personal liability coverage.
- Your landlord's policy covers the building but not your possessions.
- Policies are usually inexpensive, often a modest amount each month.
- Choose replacement cost coverage rather than actual cash value to get enough to buy new items.
- Liability coverage helps if someone is injured in your apartment and sues.

? What is an umbrella insurance policy?
? Who needs umbrella liability insurance?
? How does umbrella insurance work with car and home insurance?
- Umbrella insurance provides extra liability coverage above the limits of your home and auto policies.
- It kicks in when a large claim, such as a serious car accident lawsuit, exceeds your other coverage.
- Policies often start at one million dollars of coverage and are relatively inexpensive for that amount.
- People with significant assets or higher risk, such as owning a pool, often consider it.
- Insurers usually require minimum liability limits on the underlying policies.

? How do I choose a health insurance plan during open enrollment?
? Should I pick a high-deductible plan or a low-deductible plan?
? What should I compare when choosing health insurance?
- Compare total expected cost: premiums plus likely deductibles, copays and coinsurance for your usual care.
- High-deductible plans have lower premiums and suit people who rarely need care, especially paired with an HSA.
- Low-deductible plans cost more monthly but can save money if you expect frequent care or a planned procedure.
- Check that your doctors and prescriptions are covered in the plan's network and drug list.
- Look at the out-of-pocket maximum to understand your worst-case yearly cost.

@real-estate
? Should I rent or buy a home?
? Is buying a house always better than renting?
? How do I decide whether to rent or buy?
- Buying tends to make sense if you plan to stay at least five years and can afford the full costs comfortably.
- Owners pay property taxes, insurance, maintenance and closing costs, not just the mortgage.
- Renting offers flexibility and lets you invest the money that would have gone to a down payment.
- Compare the total monthly cost of owning with rent for a similar home.
- A home is a place to live first, and its value can fall as well as rise.

? What is the difference between a fixed-rate and an adjustable-rate mortgage?
? Should I get a fixed or adjustable mortgage?
? How does an ARM mortgage work?
- A fixed-rate mortgage keeps the same interest rate and principal-and-interest payment for the entire loan.
- An adjustable-rate mortgage starts with a fixed rate for a few years and then adjusts periodically based on a market index.
- ARMs often begin with lower rates, which can suit buyers who plan to sell or refinance before the adjustment.
- Rate caps limit how much an ARM can rise, but payments can still increase substantially.
- Fixed rates provide predictability, which many households value.

? What is private mortgage insurance?
? How can I avoid PMI?
? Why do I have to pay PMI on my mortgage?
- Private mortgage insurance protects the lender if you default, and it is usually required on conventional loans with less than 20 percent down.
- It adds a monthly cost that depends on the loan size and your credit score.
- You can usually ask to cancel PMI once you reach 20 percent equity.
- Making a 20 percent down payment avoids PMI from the start.
- Government-backed loans have their own mortgage insurance rules.

? When does refinancing a mortgage make sense?
? Should I refinance my home loan?
? How do I calculate whether a refinance is worth it?
- Refinancing makes sense when a lower rate saves enough to cover closing costs within a reasonable time.
- Divide the closing costs by the monthly savings to find the break-even point in months.
- If you will move before breaking even, refinancing probably is not worth it.
- Refinancing into a new 30-year loan can lower payments but restart the clock on interest.
- Cash-out refinancing turns home equity into cash but increases the loan balance.

? What are closing costs when buying a house?
? How much are closing costs?
? What fees do I pay at closing?
- Closing costs are the fees paid to finalize a home purchase or refinance.
- They commonly run a few percent of the loan amount.
- They can include appraisal fees, title insurance, loan origination fees and prepaid taxes and insurance.
- Ask lenders for a standardized loan estimate so you can compare offers.
- Sellers sometimes agree to cover part of the buyer's closing costs.

? What is home equity?
? How does a home equity line of credit work?
? Is it smart to borrow against my house?
- Home equity is the market value of your home minus what you still owe on the mortgage.
- A home equity line of credit, or HELOC, lets you borrow against that equity as needed, usually at a variable rate.
- Because your home secures the loan, failing to repay can put the home at risk.
- HELOCs can be useful for home improvements that add value.
- Using home equity to pay for vacations or everyday spending is generally risky.

@personal-finance
? How much money should I have saved by age 30?
? Am I behind on savings for my age?
? What are good financial milestones by age?
- One popular rule of thumb is to have about one year's salary saved for retirement by age 30, but it is only a rough benchmark.
- Your savings rate and trajectory matter more than hitting a number on a specific birthday.
- Paying off high-interest debt and building an emergency fund are milestones just as important.
- Comparing yourself with averages can be misleading because incomes and costs vary so much.
- Increasing your savings rate by one percentage point each year is a practical way to catch up.

? How should I talk to my partner about money?
? How do couples manage finances together?
? Should married couples combine bank accounts?
- Talk openly about income, debts, spending habits and goals early and regularly.
- Couples commonly choose fully joint accounts, fully separate accounts, or a mix with a shared account for bills.
- Agree on a spending amount above which you check with each other before buying.
- Monthly money meetings keep both people informed and reduce surprises.
- Both partners should know where accounts are and how to access them.

? How do I budget for having a baby?
? What costs should we plan for with a new baby?
? How can I prepare financially for parenthood?
- Plan for medical costs of pregnancy and delivery by checking your health insurance deductible and out-of-pocket maximum.
- Ongoing costs include diapers, formula or feeding supplies, clothing and childcare, which is often the largest expense.
- Review parental leave policies to estimate any drop in income.
- Adding the baby to your health insurance usually must be done within a short window after birth.
- Consider life insurance and a will once someone depends on you.

? How do I teach my kids about money?
? At what age should children get an allowance?
? How can I help my teenager learn to manage money?
- Start with simple ideas like saving, spending and sharing as early as preschool age.
- Many families begin an allowance around ages five to eight to give children practice making choices.
- Let kids make small mistakes with their own money, which teaches lessons cheaply.
- Teenagers can benefit from a debit card with parental oversight and a simple budget.
- Talking openly about family money decisions helps children understand trade-offs.

? What is net worth and how do I calculate it?
? Why should I track my net worth?
? Is a negative net worth bad?
- Net worth is the value of everything you own minus everything you owe.
- Assets include cash, investments, retirement accounts and property, while liabilities include mortgages, loans and credit card balances.
- Tracking net worth once or twice a year shows whether your overall financial position is improving.
- Many young adults have a negative net worth because of student loans, which is common and can improve over time.
- Focus on the trend rather than comparing your number with others.

? How do I protect myself from financial scams?
? What are common money scams to watch out for?
? Someone called saying they were from my bank. Is it a scam?
- Be suspicious of anyone who contacts you unexpectedly and demands urgent payment, especially by gift card, wire or cryptocurrency.
- Banks will not ask you to tell them your full password or one-time security code.
- Hang up and call the number on the back of your card to check whether a call is real.
- Investment offers promising high guaranteed returns with no risk are classic red flags.
- Report scams quickly to your bank and the relevant consumer protection agency.

? Should I lend money to friends or family?
? How do I handle a relative asking to borrow money?
? Is it a good idea to co-sign a loan?
- Only lend an amount you could afford to lose, because family loans often go unpaid.
- Writing down the amount and repayment terms can prevent misunderstandings.
- Giving a smaller gift instead of a loan sometimes protects the relationship better.
- Co-signing makes you fully responsible for the debt, and missed payments will hurt your credit too.
- It is reasonable to say no kindly if lending would strain your own finances.

? What should I do with a windfall or inheritance?
? I just received a large bonus. How should I use it?
? How do I avoid wasting unexpected money?
- Park the money in a safe account and wait a few weeks before making big decisions.
- Pay off high-interest debt and fill your emergency fund first.
- Retirement contributions and other long-term goals can come next.
- Setting aside a small portion for something enjoyable makes it easier to stick with the plan for the rest.
- For very large sums, a fee-only financial planner and a tax professional can help.

? Is it worth buying a new car or a used car?
? How much car can I afford?
? Should I lease or buy a car?
- Used cars usually offer better value, because new cars lose a large share of their value in the first few years.
- A common guideline is to keep total car costs, including insurance and fuel, to a modest share of take-home pay.
- Leasing gives lower payments and a newer car but no ownership and mileage limits.
- Buying and keeping a reliable car for many years is typically the cheapest option.
- Get loan pre-approval from a bank or credit union before visiting a dealer.

? How do I make a will?
? Do I need an estate plan if I'm young?
? What happens if I die without a will?
- A will states who receives your property and, importantly, who would care for minor children.
- Without a will, local law decides how your assets are divided, which may not match your wishes.
- Simple wills can be made with online tools, while complex situations benefit from a lawyer.
- Check beneficiary designations on retirement accounts and life insurance too, since those override a will.
- Review your will after major life events such as marriage, divorce or a new child.
"""

FINANCE_SUBJECTS += """
@retirement
? What is an annuity?
? Are annuities a good idea for retirement income?
? How does an annuity turn savings into income?
- An annuity is a contract, usually with an insurance company, that turns a lump sum or series of payments into a stream of income.
- An immediate annuity starts paying right away, while a deferred annuity grows first and pays later.
- Lifetime income annuities protect against the risk of outliving your savings.
- Some variable and indexed annuities carry high fees and complex surrender charges.
- Compare quotes from several insurers and read the surrender terms before buying.

? What are required minimum distributions?
? When do I have to start withdrawing from my IRA?
? What happens if I miss a required minimum distribution?
- Required minimum distributions are the amounts US tax law requires you to withdraw each year from most tax-deferred retirement accounts once you reach a certain age.
- The starting age has been raised in recent years and is currently in the seventies.
- The amount is based on your account balance and a life expectancy factor published by the IRS.
- Missing a distribution can trigger a penalty tax on the amount you should have withdrawn.
- Roth IRAs do not require withdrawals during the original owner's lifetime.

? What is the FIRE movement?
? How do people retire early with FIRE?
? Is financial independence, retire early realistic?
- FIRE stands for financial independence, retire early, and its followers save a very large share of income to stop working decades ahead of schedule.
- Many aim to save 50 percent or more of their income and invest it in low-cost index funds.
- The target is often about 25 times annual spending, based on the 4 percent withdrawal guideline.
- Some people pursue a lean version with very low spending, while others aim for a more comfortable budget.
- Health coverage before government programs start is one of the biggest costs early retirees must plan for.

@investing
? Why do bond prices fall when interest rates rise?
? What is a bond yield?
? How do interest rate changes affect my bond fund?
- When rates rise, newly issued bonds pay more, so existing bonds with lower coupons become less attractive and their prices fall.
- A bond's yield is the return you earn based on its price and its interest payments.
- Longer-term bonds are more sensitive to rate changes than short-term bonds.
- Duration, a measure shown for most bond funds, estimates how much the price moves for a one percentage point rate change.
- If you hold an individual bond to maturity, you still receive its full face value, barring default.

? How do I open a brokerage account?
? What is a brokerage account?
? What do I need to start investing in stocks?
- A brokerage account is an investment account that lets you buy and sell stocks, bonds, funds and other securities.
- Opening one online usually takes minutes and requires identification and bank details.
- Many large brokers now charge no commission for online stock and ETF trades.
- A taxable brokerage account has no contribution limits but does not offer the tax breaks of retirement accounts.
- Beginners often start with a broad index fund rather than individual stocks.

? What are employee stock options?
? How do RSUs work?
? What's the difference between stock options and restricted stock units?
- Stock options give you the right to buy company shares at a fixed price, while restricted stock units are shares granted to you outright once they vest.
- Options are only valuable if the share price rises above the exercise price.
- RSUs usually count as taxable income when they vest.
- Vesting schedules often spread grants over several years to encourage employees to stay.
- Holding too much of your wealth in your employer's stock concentrates risk in one company.

? What is a 529 plan?
? How should I save for my child's college education?
? Are 529 college savings plans worth it?
- A 529 plan is a US tax-advantaged account for education savings.
- Investments grow tax-deferred, and withdrawals for qualified education expenses are tax-free at the federal level.
- Many states offer a state tax deduction for contributions to their own plan.
- Plans often include age-based portfolios that become more conservative as the child approaches college.
- Retirement savings should usually come first, since students can borrow for college but no one lends for retirement.

? What is a REIT?
? How do real estate investment trusts work?
? Can I invest in real estate without buying property?
- A real estate investment trust, or REIT, is a company that owns or finances income-producing real estate such as offices, apartments or warehouses.
- Publicly traded REITs let investors own a slice of real estate through the stock market.
- REITs are generally required to pay out most of their taxable income as dividends.
- REIT dividends are usually taxed as ordinary income, so some investors hold REITs in retirement accounts.
- REIT prices can be sensitive to interest rates and property market conditions.

? Should I invest in international stocks?
? Why diversify outside my home country's stock market?
? What are emerging markets funds?
- International stocks spread your risk beyond a single country's economy and currency.
- Different regions have taken turns leading performance over the decades.
- Emerging markets funds invest in faster-growing but more volatile economies.
- Currency movements can add to or subtract from the returns of foreign investments.
- Broad global index funds hold companies from many countries in one product.

? Is gold a good investment?
? Should I buy gold as a hedge?
? How does gold fit into a portfolio?
- Gold does not pay interest or dividends, so its return depends entirely on price changes.
- Some investors hold a small amount as a hedge against inflation, currency weakness or market turmoil.
- Gold prices can be volatile and have gone through long periods of poor returns.
- Gold funds and ETFs avoid the storage and insurance costs of physical bars and coins.
- Most financial planners treat it as a minor part of a diversified portfolio at most.

@markets
? What is short selling?
? How does shorting a stock work?
? Why is short selling risky?
- Short selling means borrowing shares and selling them, hoping to buy them back later at a lower price.
- The short seller profits if the price falls and loses if it rises.
- Because a stock price can rise without limit, potential losses on a short position are theoretically unlimited.
- Short sellers also pay borrowing fees and must cover any dividends paid while they hold the position.
- A sharp rise that forces many short sellers to buy back at once is called a short squeeze.

? What is an IPO?
? Should I buy a stock on its IPO day?
? How does a company go public?
- An initial public offering, or IPO, is when a private company first sells shares to the public on a stock exchange.
- Companies go public to raise money for growth and to let early investors and employees sell shares.
- Investment banks help set the offering price and sell the shares to institutional investors first.
- First-day prices can swing wildly, and many IPOs underperform the market in the following years.
- Newly public companies often have lock-up periods that stop insiders from selling right away.

? What does buying on margin mean?
? How does a margin account work?
? What is a margin call?
- Buying on margin means borrowing money from your broker to buy more securities than you could with your own cash.
- Margin magnifies both gains and losses.
- If your account value falls below a required level, the broker issues a margin call demanding more cash or securities.
- If you cannot meet the call, the broker can sell your holdings without asking.
- You also pay interest on the borrowed amount, which reduces returns.

? How do exchange rates work?
? Why does the value of the dollar change?
? How do currency movements affect travelers and investors?
- An exchange rate is the price of one currency in terms of another, set largely by supply and demand in currency markets.
- Interest rates, inflation, trade balances and investor confidence all influence exchange rates.
- A stronger home currency makes foreign travel and imports cheaper but hurts exporters.
- For investors, a falling foreign currency reduces the value of foreign holdings when converted back.
- Banks and exchange booths add a markup, so compare the rate you get with the mid-market rate.

@saving
? What are Treasury bills?
? Are Treasury bills a safe place for cash?
? How do I buy T-bills?
- Treasury bills are short-term US government debt securities with maturities of up to one year.
- They are sold at a discount and pay their full face value at maturity, and the difference is your interest.
- They are considered among the safest investments because they are backed by the US government.
- Interest on T-bills is exempt from state and local income tax.
- They can be bought directly from the government's TreasuryDirect site or through a brokerage account.

? What is the difference between a money market account and a money market fund?
? Is a money market fund safe?
? Where should I keep cash I might need soon?
- A money market account is a bank deposit account, while a money market fund is an investment fund that holds short-term debt.
- Bank money market accounts are typically covered by deposit insurance up to the legal limits.
- Money market funds are not deposit-insured, but they invest in very short-term, high-quality securities and rarely lose value.
- Money market accounts and funds both usually pay more interest than a standard savings account when rates are high.
- They are common places to keep an emergency fund or cash waiting to be invested.

@debt
? What is a payday loan?
? Why are payday loans so expensive?
? What are alternatives to payday loans?
- A payday loan is a small, short-term loan meant to be repaid from your next paycheck.
- Fees make the effective annual interest rate extremely high, often in the hundreds of percent.
- Many borrowers roll the loan over repeatedly, paying new fees each time.
- Alternatives include small loans from credit unions, payment plans with the bill issuer, or help from local assistance programs.
- Building even a small emergency fund reduces the need for this kind of borrowing.

? Is buy now, pay later a good idea?
? How do buy now pay later apps work?
? What are the risks of using BNPL for shopping?
- Buy now, pay later services split a purchase into a few installments, often with no interest if every payment is on time.
- They make it easy to spend more than planned, especially when several plans run at once.
- Missed payments can bring late fees and, with some providers, affect your credit.
- Returns can be awkward, since you may need to keep paying until the refund is processed.
- Used rarely and for planned purchases, they can be a cheap way to spread costs.

? How does bankruptcy work?
? What is the difference between Chapter 7 and Chapter 13 bankruptcy?
? How long does bankruptcy stay on a credit report?
- Bankruptcy is a legal process that can eliminate or restructure debts a person cannot repay.
- In the United States, Chapter 7 usually wipes out eligible unsecured debts after selling nonexempt assets, while Chapter 13 sets up a repayment plan over three to five years.
- Some debts, such as most student loans, child support and recent taxes, are generally not discharged.
- A bankruptcy can remain on a credit report for up to ten years.
- A nonprofit credit counselor can help you explore alternatives first.

@credit
? Can I ask my credit card company for a lower interest rate?
? How do I negotiate a lower APR?
? Will calling my card issuer actually reduce my interest rate?
- Yes, it is worth asking, especially if you have a history of on-time payments.
- Call the number on the back of the card and ask politely whether they can lower your APR.
- Mention competing offers, such as balance transfer deals you have received.
- If the first representative says no, you can ask whether someone else can review the request.
- Even a few percentage points less can save real money on a balance you carry.

@banking
? What should I do if my identity is stolen?
? How do I recover from identity theft?
? Someone opened a credit card in my name. What now?
- Act quickly: contact the company where the fraud happened and close or freeze the affected accounts.
- Place a fraud alert or credit freeze with the credit bureaus to block new accounts.
- In the United States, you can report identity theft to the Federal Trade Commission and get a recovery plan.
- Review your credit reports for other unfamiliar accounts or inquiries.
- Change passwords and turn on two-factor authentication for your email and financial accounts.

? Are payment apps safe for sending money?
? What should I know before using peer-to-peer payment apps?
? Can I get my money back if I send it to the wrong person on an app?
- Peer-to-peer payment apps are convenient for paying people you know, but payments are often instant and hard to reverse.
- Double-check the recipient before sending, since a typo can send money to a stranger.
- Many apps offer little protection if you are tricked into paying a scammer.
- Avoid using these apps to pay unknown sellers online.
- Turn on app security features such as a PIN or biometric lock.

? Should I use my credit card abroad?
? What are foreign transaction fees?
? Should I pay in local currency or my home currency when traveling?
- Many cards charge a foreign transaction fee, often around three percent of each purchase made abroad.
- Several travel-focused cards waive this fee entirely.
- When a card terminal offers to charge you in your home currency, choosing the local currency usually gets a better rate.
- Tell your bank about travel plans if it requires notice, so purchases are not blocked.
- Carry a backup card in case one is lost or declined.

@taxes
? How does the gift tax work?
? Do I have to pay tax if I give my child money?
? How much money can I give someone without paying gift tax?
- In the United States, the giver, not the recipient, is responsible for any gift tax.
- Each person can give up to an annual exclusion amount per recipient without filing a gift tax return.
- Gifts above that amount require a return but rarely lead to tax, because they count against a large lifetime exemption.
- Paying tuition or medical bills directly to the school or provider does not count toward the annual limit.
- Rules differ widely in other countries, so check local requirements.

? What triggers a tax audit?
? How can I reduce my chances of an IRS audit?
? What happens if I get audited?
- Audits are relatively rare, and many are handled entirely by mail.
- Mismatches between your return and the forms reported by employers and banks are a common trigger.
- Unusually large deductions relative to income can also draw attention.
- Keep receipts and records that support your deductions for several years.
- If you receive an audit letter, respond by the deadline and consider help from a tax professional.

@insurance
? What does homeowners insurance cover?
? Does homeowners insurance cover floods?
? How much homeowners insurance do I need?
- Homeowners insurance typically covers damage to the house and belongings from events like fire, wind and theft, plus personal liability.
- Standard policies generally do not cover floods or earthquakes, which need separate coverage.
- Insure the home for the cost to rebuild it, which can differ from its market price.
- Raising the deductible lowers the premium but increases what you pay after a claim.
- An inventory of your belongings with photos makes claims easier.

? Is travel insurance worth buying?
? Does travel insurance cover medical emergencies abroad?
? What does trip cancellation insurance cover?
- Travel insurance can cover trip cancellation, lost luggage and emergency medical care abroad, depending on the policy.
- Your regular health insurance may offer little or no coverage outside your home country.
- Medical evacuation coverage matters most for remote destinations or cruises.
- Many policies exclude pre-existing conditions unless you buy soon after booking.
- Some credit cards include basic travel protections, so check before buying a separate policy.

? What is Medicare?
? What do Medicare Parts A, B and D cover?
? When should I sign up for Medicare?
- Medicare is the US federal health insurance program mainly for people 65 and older and some younger people with disabilities.
- Part A covers hospital stays, Part B covers doctor visits and outpatient care, and Part D covers prescription drugs.
- Medicare Advantage plans, also called Part C, are private plans that bundle these benefits.
- Signing up late can lead to permanent premium penalties unless you have qualifying coverage through work.
- Medicare does not cover most long-term custodial care.

? What is COBRA health insurance?
? How do I keep my health insurance after leaving a job?
? Is COBRA coverage worth the cost?
- COBRA is a US law that lets many people keep their employer's group health plan for a limited time after leaving a job.
- You usually pay the full premium plus a small administrative fee, which can be expensive.
- Coverage is typically available for up to 18 months in most cases.
- A marketplace plan may cost less, especially if you qualify for subsidies based on income.
- Losing job-based coverage opens a special enrollment period for other plans.

? Is pet insurance worth it?
? How does pet insurance work?
? What does pet insurance usually not cover?
- Pet insurance reimburses part of veterinary bills for covered accidents and illnesses after a deductible.
- Most policies exclude pre-existing conditions, so enrolling while a pet is young and healthy matters.
- Routine care like vaccinations is often excluded or sold as an add-on.
- Premiums usually rise as pets get older.
- Some owners instead set aside a dedicated savings fund for vet bills.

? Do I need dental insurance?
? Is a dental savings plan better than dental insurance?
? What does dental insurance usually cover?
- Dental insurance plans often cover preventive cleanings fully and pay a smaller share of fillings and major work.
- Many plans have annual maximums that limit how much they will pay each year.
- Waiting periods may apply before major procedures are covered.
- Dental discount plans charge a membership fee in exchange for reduced prices at participating dentists.
- Compare the premium with the care you expect to need in a typical year.

@personal-finance
? What is the difference between a fee-only financial planner and a commission-based advisor?
? How do I choose a financial advisor?
? What does fiduciary mean for a financial advisor?
- A fee-only planner is paid directly by clients, while a commission-based advisor earns money from the products they sell.
- A fiduciary is legally required to act in the client's best interest.
- Ask how the advisor is paid and whether they act as a fiduciary at all times.
- Check credentials and any disciplinary history through regulator databases.
- Flat-fee or hourly planners can help with a one-time plan if you do not need ongoing management.
"""

# ---------------------------------------------------------------------------------------------------------------
# Finance–Medical: medical questions (label 1). General, educational answers; not individual medical advice.
# ---------------------------------------------------------------------------------------------------------------

MEDICAL_SUBJECTS = """
@cardiology
? What is high blood pressure?
? What do the two numbers in a blood pressure reading mean?
? Why is hypertension called a silent killer?
- High blood pressure, or hypertension, means the force of blood against artery walls stays higher than normal over time.
- The top number, systolic pressure, is measured while the heart beats, and the bottom number, diastolic pressure, between beats.
- It usually causes no symptoms, which is why regular checks matter.
- Over years it strains the heart and blood vessels and raises the risk of stroke, heart attack and kidney disease.
- Less salt, regular exercise, limiting alcohol and keeping a healthy weight can all lower it, and many people also need medication.
- Home blood pressure monitors can help track readings between clinic visits.

? What are the warning signs of a heart attack?
? How do heart attack symptoms differ in women?
? What should I do if someone might be having a heart attack?
- Common heart attack symptoms include chest pain or pressure, pain spreading to the arm, jaw or back, shortness of breath, and cold sweats.
- Women, older adults and people with diabetes more often have subtler symptoms such as nausea, unusual fatigue or breathlessness without obvious chest pain.
- A heart attack happens when blood flow to part of the heart muscle is blocked, usually by a clot in a narrowed coronary artery.
- Calling emergency services immediately matters, because treatment within the first hours saves heart muscle.
- Do not wait to see whether symptoms pass, and do not drive yourself to the hospital.

? What is cholesterol and why does it matter?
? What is the difference between LDL and HDL cholesterol?
? How can I lower my LDL cholesterol?
- Cholesterol is a waxy substance the body needs to build cells and hormones, carried in the blood by particles called lipoproteins.
- LDL cholesterol can build up in artery walls as plaque, which is why it is often called bad cholesterol.
- HDL cholesterol helps carry cholesterol away to the liver and is often called good cholesterol.
- Diets lower in saturated fat and higher in fiber, regular activity and not smoking help improve levels.
- Some people have high cholesterol for genetic reasons and need medicines such as statins.

? What is atrial fibrillation?
? Why does atrial fibrillation increase stroke risk?
? What does an irregular heartbeat feel like?
- Atrial fibrillation is a common heart rhythm disorder in which the upper chambers of the heart beat rapidly and irregularly.
- Some people feel palpitations, a fluttering chest, tiredness or breathlessness, while others notice nothing.
- Because blood can pool in the upper chambers, clots may form and travel to the brain, causing a stroke.
- Treatment often includes blood thinners to reduce stroke risk and medicines or procedures to control the rhythm or rate.
- An electrocardiogram is the standard test to confirm it.

@endocrinology
? What is type 2 diabetes?
? What are the early signs of type 2 diabetes?
? How is type 2 diabetes different from type 1?
- Type 2 diabetes is a condition in which the body does not respond well to insulin and blood sugar stays too high.
- In type 1 diabetes, the immune system destroys the insulin-producing cells in the pancreas, so insulin must be replaced.
- Early signs can include increased thirst, frequent urination, fatigue and blurred vision, though many people have no symptoms at first.
- Risk rises with excess weight, physical inactivity, family history and age.
- Healthy eating, regular exercise and weight loss can improve blood sugar control, and many people also take medication.
- Over time, poorly controlled diabetes can damage the eyes, kidneys, nerves and blood vessels.

? What does the thyroid gland do?
? What are symptoms of an underactive thyroid?
? What is hypothyroidism?
- The thyroid is a butterfly-shaped gland in the neck that makes hormones controlling the body's metabolism.
- In hypothyroidism the gland makes too little hormone, which can cause tiredness, weight gain, feeling cold, dry skin and constipation.
- An overactive thyroid can cause the opposite, including weight loss, a fast heartbeat and anxiety.
- A blood test measuring thyroid-stimulating hormone is usually the first step in diagnosis.
- Hypothyroidism is commonly treated with a daily hormone replacement tablet.

? What is prediabetes?
? Can prediabetes be reversed?
? What blood sugar level counts as prediabetes?
- Prediabetes means blood sugar is higher than normal but not yet high enough to be diagnosed as type 2 diabetes.
- It is often found with a fasting glucose test or an HbA1c test, which reflects average blood sugar over about three months.
- Many people with prediabetes can return to normal levels through weight loss, more activity and dietary changes.
- Losing even five to seven percent of body weight significantly lowers the risk of progressing to diabetes.
- Most people with prediabetes do not know they have it.

@pulmonology
? What is asthma?
? What triggers an asthma attack?
? How do asthma inhalers work?
- Asthma is a long-term condition in which the airways become inflamed and narrow, causing wheezing, coughing, chest tightness and breathlessness.
- Common triggers include colds, allergens like pollen and dust mites, smoke, cold air and exercise.
- Reliever inhalers relax the muscles around the airways to ease symptoms quickly.
- Preventer inhalers, usually containing inhaled steroids, reduce inflammation when used regularly.
- A written asthma action plan helps people know what to do when symptoms worsen.

? What is pneumonia?
? How is pneumonia different from bronchitis?
? What are the symptoms of pneumonia?
- Pneumonia is an infection that inflames the air sacs in one or both lungs, which may fill with fluid.
- Symptoms include cough with phlegm, fever, chills, chest pain when breathing and shortness of breath.
- Bronchitis affects the larger airways rather than the air sacs and is often milder.
- Pneumonia can be caused by bacteria, viruses or fungi, and bacterial pneumonia is treated with antibiotics.
- Older adults, young children and people with weakened immune systems are at higher risk of severe illness.

? What is COPD?
? What causes chronic obstructive pulmonary disease?
? Can lungs recover after quitting smoking?
- COPD, or chronic obstructive pulmonary disease, is a long-term lung condition that makes it hard to move air out of the lungs.
- It includes emphysema, damage to the air sacs, and chronic bronchitis, long-lasting airway inflammation.
- Smoking is the main cause, though long-term exposure to dust, fumes and indoor smoke also contributes.
- Lung damage from COPD cannot be fully reversed, but quitting smoking slows its progression.
- Pulmonary rehabilitation, inhalers and vaccinations help people breathe and live better with the disease.

@gastroenterology
? What is acid reflux?
? What causes heartburn after meals?
? What is GERD?
- Acid reflux happens when stomach acid flows back into the esophagus, often causing a burning feeling called heartburn.
- When reflux happens frequently and causes symptoms or damage, it is called gastroesophageal reflux disease, or GERD.
- Large meals, lying down after eating, fatty or spicy foods, alcohol and excess weight can make it worse.
- Raising the head of the bed and eating smaller meals earlier in the evening often help.
- Persistent symptoms, trouble swallowing or unexplained weight loss should be evaluated by a doctor.

? What is irritable bowel syndrome?
? What are common IBS symptoms?
? How is IBS managed?
- Irritable bowel syndrome is a common disorder of gut function that causes abdominal pain along with diarrhea, constipation or both.
- It does not damage the intestines, but it can significantly affect quality of life.
- Symptoms often flare with certain foods, stress or hormonal changes.
- Many people improve by identifying trigger foods, sometimes with a structured low-FODMAP diet guided by a dietitian.
- Bleeding, weight loss or symptoms starting later in life need further tests to rule out other conditions.

? What are the symptoms of appendicitis?
? How do I know if stomach pain is appendicitis?
? Why is appendicitis an emergency?
- Appendicitis often begins as pain around the belly button that moves to the lower right abdomen and becomes sharper.
- Other signs include loss of appetite, nausea, vomiting and a low fever.
- The pain usually worsens with movement, coughing or pressing on the area.
- It is an emergency because an inflamed appendix can burst and spread infection through the abdomen.
- Treatment is usually surgery to remove the appendix, though some mild cases are treated with antibiotics.

? What is celiac disease?
? How is celiac disease different from gluten sensitivity?
? What happens when someone with celiac disease eats gluten?
- Celiac disease is an autoimmune condition in which eating gluten damages the lining of the small intestine.
- Gluten is a protein found in wheat, barley and rye.
- Symptoms range from bloating and diarrhea to anemia, fatigue and poor growth in children, and some people have few symptoms.
- Diagnosis usually involves blood tests and a biopsy, done while the person is still eating gluten.
- The only treatment is a strict lifelong gluten-free diet.

@dermatology
? What is eczema?
? How can I manage eczema flare-ups?
? What causes atopic dermatitis?
- Eczema, or atopic dermatitis, is a common condition that makes skin dry, itchy and inflamed.
- It often starts in childhood and is linked with allergies and asthma in many families.
- A weakened skin barrier lets moisture escape and irritants get in.
- Applying thick moisturizers daily, especially after bathing, is the foundation of care.
- Harsh soaps, heat, sweat and certain fabrics can trigger flares.

? How do I check my skin for signs of melanoma?
? What are the ABCDEs of melanoma?
? When should a mole be looked at by a doctor?
- The ABCDE guide lists warning signs in moles: asymmetry, irregular borders, uneven color, a diameter larger than about six millimeters, and evolving size or shape.
- A new spot that looks different from your other moles also deserves attention.
- Melanoma is less common than other skin cancers but more likely to spread.
- Checking your skin monthly, including your back with a mirror, helps you notice changes.
- Protecting skin from sunburn and avoiding tanning beds lowers risk.

? What causes acne?
? How does acne treatment work?
? Why do teenagers get acne?
- Acne develops when hair follicles become clogged with oil and dead skin cells, and bacteria and inflammation follow.
- Hormonal changes during puberty increase oil production, which is why teenagers are commonly affected.
- Over-the-counter treatments such as benzoyl peroxide and adapalene work for many mild cases.
- Picking or squeezing spots can increase scarring.
- Persistent or severe acne can be treated with prescription options that reduce scarring.

? What is psoriasis?
? Is psoriasis contagious?
? What does psoriasis look like?
- Psoriasis is a long-term immune-mediated condition that speeds up skin cell growth, leading to thick, scaly patches.
- Patches often appear on the elbows, knees, scalp and lower back.
- It is not contagious and cannot be caught from another person.
- Some people with psoriasis develop psoriatic arthritis, which causes joint pain and swelling.
- Treatments include creams, light therapy and medicines that target the immune system.

@neurology
? What are the signs of a stroke?
? What does FAST stand for in stroke awareness?
? Why is time so important when someone has a stroke?
- FAST is a simple way to remember common stroke signs: face drooping, arm weakness, speech difficulty, and time to call emergency services.
- Other signs can include sudden confusion, trouble seeing, severe headache or loss of balance.
- Most strokes are caused by a blocked artery cutting off blood supply to part of the brain.
- Brain cells begin dying within minutes, and some treatments only work if given within hours.
- Note the time symptoms began, because it helps doctors choose treatment.

? What is a migraine?
? How is a migraine different from a regular headache?
? What triggers migraines?
- A migraine is a neurological condition that causes intense, often throbbing headaches, usually on one side of the head.
- Attacks commonly come with nausea and sensitivity to light and sound and can last hours to days.
- Some people experience an aura, such as flashing lights or zigzag lines, before the headache.
- Triggers vary and can include missed meals, poor sleep, stress, hormonal changes and certain drinks.
- Keeping a headache diary helps identify personal patterns.

? What is a concussion?
? What are the symptoms of a concussion?
? How long does it take to recover from a concussion?
- A concussion is a mild traumatic brain injury caused by a blow or jolt that shakes the brain inside the skull.
- Symptoms include headache, confusion, dizziness, nausea, memory problems and sensitivity to light.
- Loss of consciousness is not required; many concussions happen without it.
- Most people recover within a few weeks with rest followed by a gradual return to activity.
- Returning to sports before symptoms clear raises the risk of a more serious second injury.

? What is epilepsy?
? What should I do if someone has a seizure?
? What causes seizures?
- Epilepsy is a neurological condition in which a person has repeated seizures caused by bursts of abnormal electrical activity in the brain.
- During a convulsive seizure, keep the person safe by moving hard objects away and cushioning their head.
- Do not put anything in their mouth or hold them down.
- Once jerking stops, roll them onto their side and stay with them until they recover.
- A seizure lasting longer than five minutes needs emergency help.

@infectious-disease
? What is the difference between a cold and the flu?
? How can I tell if I have influenza or just a cold?
? Why is the flu more serious than a common cold?
- Colds and flu are both respiratory infections caused by viruses, but flu usually comes on suddenly and feels much worse.
- Flu often brings high fever, body aches, chills and exhaustion, while colds mainly cause a runny nose, sneezing and sore throat.
- Flu can lead to complications such as pneumonia, especially in older adults, young children and people with chronic conditions.
- Annual flu vaccination lowers the risk of infection and severe illness.
- Antiviral medicines can help some people if started early in the illness.

? Why don't antibiotics work against viruses?
? What is antibiotic resistance?
? Why should I finish a course of antibiotics?
- Antibiotics target structures and processes found in bacteria, such as cell walls, that viruses do not have.
- Using antibiotics when they are not needed encourages resistant bacteria to survive and spread.
- Antibiotic resistance means common infections become harder to treat.
- Take antibiotics exactly as prescribed and never share or save leftover pills.
- Good hygiene and vaccination reduce infections and the need for antibiotics.

? What is a urinary tract infection?
? What are the symptoms of a UTI?
? Why are women more likely to get urinary tract infections?
- A urinary tract infection is an infection anywhere in the urinary system, most often the bladder.
- Typical symptoms include a burning feeling when urinating, needing to urinate often, cloudy urine and lower abdominal discomfort.
- Women get them more often partly because the urethra is shorter, so bacteria reach the bladder more easily.
- Fever, back pain or vomiting can mean the infection has reached the kidneys, which needs prompt care.
- Bacterial UTIs are usually treated with a short course of antibiotics.

? What is shingles?
? Can you get shingles if you had chickenpox?
? Is there a vaccine for shingles?
- Shingles is a painful rash caused by reactivation of the chickenpox virus, which stays dormant in nerve cells after childhood infection.
- The rash usually appears as a band of blisters on one side of the body or face.
- Some people have lasting nerve pain after the rash heals, called postherpetic neuralgia.
- The risk rises with age and with a weakened immune system.
- Vaccines are available that greatly reduce the risk of shingles in older adults.

? How do vaccines work?
? How does a vaccine train the immune system?
? Why do some vaccines need booster shots?
- Vaccines train the immune system to recognize a germ by exposing it to a harmless piece, a weakened form, or instructions to make one of the germ's proteins.
- The immune system responds by making antibodies and memory cells.
- If the real germ appears later, the body recognizes it quickly and fights it before it causes serious illness.
- Some vaccines need boosters because immune memory fades or because the germ changes over time.
- When enough people are vaccinated, spread is reduced and vulnerable people are protected too.

@nephrology
? What are kidney stones?
? What does passing a kidney stone feel like?
? How can I prevent kidney stones?
- Kidney stones are hard deposits of minerals and salts that form inside the kidneys.
- Passing a stone can cause severe pain in the side and back that may spread to the lower abdomen and groin, often in waves.
- Other symptoms can include blood in the urine, nausea and frequent urination.
- Drinking enough fluid to produce pale urine is one of the best ways to prevent new stones.
- Depending on the stone type, limiting salt and certain high-oxalate foods may help.

? What do the kidneys do?
? What is chronic kidney disease?
? What are early signs of kidney problems?
- The kidneys filter waste and extra fluid from the blood, balance salts and help control blood pressure.
- Chronic kidney disease is a gradual loss of kidney function over months or years.
- Early kidney disease usually causes no symptoms and is found through blood and urine tests.
- Diabetes and high blood pressure are the most common causes.
- Controlling blood sugar and blood pressure helps slow the decline.

@orthopedics
? How should I treat a sprained ankle?
? What is the RICE method for injuries?
? How long does a sprained ankle take to heal?
- For a mild sprain, many people follow RICE in the first days: rest, ice, compression and elevation.
- Ice wrapped in a cloth for 15 to 20 minutes at a time can reduce swelling.
- Gentle movement and balance exercises once pain allows help the ligaments heal and prevent stiffness.
- Mild sprains often improve in one to three weeks, while severe ones can take months.
- Inability to bear weight or marked tenderness over the ankle bones may signal a fracture that needs an X-ray.

? What is osteoporosis?
? How can I keep my bones strong as I age?
? Who is at risk of osteoporosis?
- Osteoporosis is a condition in which bones become thin and fragile, making fractures more likely.
- It often causes no symptoms until a bone breaks, commonly the hip, spine or wrist.
- Women after menopause are at particular risk because estrogen helps protect bone density.
- Weight-bearing exercise, enough calcium and vitamin D, and avoiding smoking help keep bones strong.
- A bone density scan can measure bone strength and guide treatment.

? What is carpal tunnel syndrome?
? Why do my fingers go numb when I type?
? How is carpal tunnel treated?
- Carpal tunnel syndrome happens when the median nerve is squeezed as it passes through a narrow channel in the wrist.
- It causes numbness, tingling and weakness in the thumb, index and middle fingers, often worse at night.
- Repetitive hand movements, pregnancy, diabetes and arthritis can contribute.
- Wrist splints worn at night and changes to hand activities often relieve mild cases.
- Severe or persistent cases may be treated with steroid injections or surgery to release the ligament.

? What is osteoarthritis?
? Why do joints hurt more with age?
? How can I manage knee arthritis?
- Osteoarthritis is the most common form of arthritis, in which the cartilage cushioning the ends of bones gradually wears down.
- It most often affects knees, hips, hands and the spine, causing pain and stiffness.
- Stiffness is often worst in the morning or after rest and eases with movement.
- Staying active, strengthening the muscles around the joint and managing weight can reduce symptoms.
- Physical therapy, pain relievers and sometimes joint replacement are part of treatment.

@ophthalmology
? What is glaucoma?
? Why is glaucoma called the silent thief of sight?
? How is glaucoma detected?
- Glaucoma is a group of eye diseases that damage the optic nerve, often linked with raised pressure inside the eye.
- The most common type progresses slowly and painlessly, first affecting side vision.
- Lost vision cannot be restored, but treatment can slow or stop further damage.
- Regular eye exams that check eye pressure and the optic nerve can find it early.
- Eye drops that lower pressure are the usual first treatment.

? What are cataracts?
? How is cataract surgery done?
? What are the symptoms of cataracts?
- A cataract is a clouding of the eye's natural lens, which usually develops slowly with age.
- Symptoms include blurry or dim vision, glare from lights and faded colors.
- Cataract surgery replaces the cloudy lens with a clear artificial one and is one of the most common operations.
- Most people notice clearer vision within days.
- Wearing sunglasses and not smoking may lower the risk.

? What is pink eye?
? Is conjunctivitis contagious?
? How do you treat pink eye?
- Pink eye, or conjunctivitis, is inflammation of the thin membrane covering the white of the eye and the inner eyelids.
- It can be caused by viruses, bacteria, allergies or irritants.
- Viral and bacterial forms spread easily, so hand washing and not sharing towels matter.
- Viral conjunctivitis usually clears on its own, while bacterial cases may be treated with antibiotic drops.
- Eye pain, vision changes or strong sensitivity to light need prompt medical attention.

@pediatrics
? When is a fever in a child dangerous?
? What temperature counts as a fever in babies?
? How should I care for a child with a fever?
- A fever is generally a temperature of 38 degrees Celsius or higher, and it is usually a sign the body is fighting an infection.
- Any fever in a baby younger than three months needs prompt medical assessment.
- How the child looks and behaves matters more than the exact number on the thermometer.
- Offer fluids often and dress the child in light clothing.
- Seek urgent care if a child is unusually drowsy, has trouble breathing, shows signs of dehydration or has a rash that does not fade when pressed.

? Why do children get so many ear infections?
? What are the signs of an ear infection in a toddler?
? Do ear infections always need antibiotics?
- Young children get ear infections often because their eustachian tubes are shorter and more horizontal, so fluid drains poorly.
- Signs include ear pain, tugging at the ear, fussiness, trouble sleeping and fever.
- Many mild ear infections clear on their own within a few days.
- Doctors sometimes suggest watchful waiting with pain relief before prescribing antibiotics.
- Repeated infections can affect hearing and may need a specialist's review.

? What is croup?
? Why does my child have a barking cough?
? How is croup treated?
- Croup is a viral infection that swells the voice box and windpipe in young children, causing a barking cough.
- Symptoms are often worse at night and can include a harsh noise when breathing in, called stridor.
- Most cases are mild and get better within a few days.
- Cool night air or steam sometimes eases symptoms, although evidence for this is limited.
- Noisy breathing at rest, struggling to breathe or bluish lips need emergency care.

@psychiatry
? What is clinical depression?
? How is depression different from sadness?
? What are common symptoms of depression?
- Depression is a common mental health condition marked by persistent low mood or loss of interest in activities for at least two weeks.
- Unlike ordinary sadness, it affects sleep, appetite, energy, concentration and daily functioning.
- Some people also feel worthless or hopeless or have thoughts of death.
- Effective treatments include talking therapies, medication, or both.
- Anyone having thoughts of self-harm should contact a crisis line or emergency services right away.

? What is generalized anxiety disorder?
? How do I know if my worrying is an anxiety disorder?
? What helps with anxiety?
- Generalized anxiety disorder involves excessive, hard-to-control worry about many everyday things for months.
- Physical symptoms can include restlessness, muscle tension, trouble sleeping and a racing heart.
- Cognitive behavioral therapy is one of the most effective treatments.
- Regular exercise, good sleep and limiting caffeine can reduce symptoms.
- Some people benefit from medication prescribed alongside therapy.

@hematology
? What is anemia?
? What causes iron deficiency anemia?
? What are the symptoms of low iron?
- Anemia means the blood has too few healthy red blood cells or too little hemoglobin to carry oxygen well.
- Iron deficiency is the most common cause worldwide.
- Symptoms include tiredness, weakness, pale skin, shortness of breath and feeling cold.
- Heavy menstrual periods, pregnancy, blood loss and low dietary iron can all contribute.
- A simple blood count can diagnose it, and the underlying cause should be found.

? What is a blood clot in the leg?
? What are symptoms of deep vein thrombosis?
? Why are long flights linked to blood clots?
- Deep vein thrombosis is a blood clot in a deep vein, usually in the leg.
- Symptoms include swelling, pain, warmth and redness in one leg.
- Long periods of sitting, surgery, pregnancy and some medications increase the risk.
- A clot can travel to the lungs, causing a pulmonary embolism, which is an emergency.
- On long flights, walking the aisle and flexing your calves helps keep blood moving.

@allergy
? What is anaphylaxis?
? What are the signs of a severe allergic reaction?
? How is an epinephrine auto-injector used?
- Anaphylaxis is a severe, potentially life-threatening allergic reaction that can develop within minutes.
- Signs include swelling of the lips or throat, difficulty breathing, hives, vomiting and dizziness.
- Common triggers include foods such as peanuts and shellfish, insect stings and some medicines.
- Epinephrine is the first-line treatment, given by auto-injector into the outer thigh.
- Emergency services should always be called, even if symptoms improve after the injection.

? What is hay fever?
? How can I reduce seasonal allergy symptoms?
? Why do pollen allergies make my eyes itch?
- Hay fever, or allergic rhinitis, is an allergic reaction to airborne particles such as pollen.
- The immune system overreacts and releases histamine, causing sneezing, a runny nose and itchy, watery eyes.
- Keeping windows closed on high-pollen days and showering after being outdoors can help.
- Antihistamines and steroid nasal sprays are common treatments.
- Allergy immunotherapy can reduce sensitivity over several years for some people.

@nutrition
? Why is vitamin D important?
? How do I know if I'm low in vitamin D?
? Can I get enough vitamin D from the sun?
- Vitamin D helps the body absorb calcium and keep bones and muscles healthy.
- The skin makes vitamin D in sunlight, but in winter at high latitudes there may not be enough sun.
- Few foods are naturally rich in it; oily fish and egg yolks are among them, and some foods are fortified.
- Deficiency can cause bone pain and muscle weakness, and in children it can lead to rickets.
- A blood test can check levels, and supplements are common in some groups.

? How much protein do adults need?
? Do I need protein supplements?
? What are good sources of dietary protein?
- A common reference for healthy adults is about 0.8 grams of protein per kilogram of body weight per day.
- Older adults and very active people may benefit from somewhat more.
- Good sources include fish, poultry, eggs, dairy, beans, lentils, tofu and nuts.
- Most people eating a varied diet get enough protein without supplements.
- People with advanced kidney disease may be advised to limit protein.

@sleep-medicine
? What is sleep apnea?
? Why do people with sleep apnea snore?
? How is obstructive sleep apnea treated?
- Obstructive sleep apnea is a disorder in which the airway repeatedly narrows or closes during sleep, briefly stopping breathing.
- Loud snoring, gasping, restless sleep and daytime sleepiness are common signs.
- Untreated sleep apnea is linked with high blood pressure, heart disease and accidents from drowsiness.
- A sleep study is used to diagnose it.
- Continuous positive airway pressure, or CPAP, keeps the airway open with a gentle flow of air through a mask.

? What is insomnia?
? What causes chronic insomnia?
? How is insomnia treated without sleeping pills?
- Insomnia is persistent difficulty falling asleep, staying asleep or waking too early despite having the chance to sleep.
- It is considered chronic when it happens at least three nights a week for three months.
- Stress, irregular schedules, caffeine, pain and mental health conditions are common contributors.
- Cognitive behavioral therapy for insomnia is the recommended first treatment and works for many people.
- Keeping regular wake times and using the bed only for sleep are key parts of it.

@rheumatology
? What is gout?
? Why does gout cause such intense joint pain?
? What foods can trigger a gout flare?
- Gout is a type of inflammatory arthritis caused by uric acid crystals forming in a joint.
- It often starts suddenly at night with severe pain, redness and swelling, classically in the big toe.
- High uric acid levels can come from genetics, kidney function, certain medicines and diet.
- Alcohol, especially beer, sugary drinks and large amounts of red meat or shellfish can trigger attacks.
- Medicines can relieve flares, and others lower uric acid to prevent future attacks.

? What is rheumatoid arthritis?
? How is rheumatoid arthritis different from osteoarthritis?
? What are early signs of rheumatoid arthritis?
- Rheumatoid arthritis is an autoimmune disease in which the immune system attacks the lining of the joints.
- It typically affects small joints of the hands and feet on both sides of the body.
- Early signs include joint swelling, tenderness and morning stiffness lasting more than an hour.
- Unlike osteoarthritis, which comes from wear, it is driven by inflammation and can also affect other organs.
- Early treatment with disease-modifying drugs helps prevent joint damage.

@ent
? What is tinnitus?
? Why do I hear ringing in my ears?
? Can tinnitus go away?
- Tinnitus is hearing ringing, buzzing or hissing sounds that have no external source.
- It is often linked with hearing loss from aging or noise exposure.
- Short bouts after a loud concert are common and usually fade.
- Persistent tinnitus in one ear, or with dizziness or sudden hearing loss, should be checked promptly.
- Sound therapy, hearing aids and counseling approaches can make it less bothersome.

? What causes sinus infections?
? How can I tell if sinusitis is bacterial?
? How long does a sinus infection last?
- Sinusitis is inflammation of the sinuses, usually following a cold virus.
- Symptoms include facial pressure, a blocked nose, thick nasal discharge and reduced sense of smell.
- Most cases are viral and improve within about ten days without antibiotics.
- Saline rinses and steam can ease congestion.
- Symptoms that last longer, worsen after initially improving, or come with high fever may point to a bacterial infection.

@dental
? What is gum disease?
? Why do my gums bleed when I brush?
? How can I prevent periodontitis?
- Gum disease starts as gingivitis, inflammation of the gums caused by plaque buildup, and often shows up as bleeding when brushing.
- If untreated it can progress to periodontitis, in which the tissues and bone supporting the teeth are damaged.
- Brushing twice a day with fluoride toothpaste and cleaning between the teeth daily removes plaque.
- Smoking and poorly controlled diabetes increase the risk.
- Regular dental checkups catch early gum disease, when it is reversible.

@emergency
? What is heat stroke?
? How is heat exhaustion different from heat stroke?
? What should I do if someone collapses in the heat?
- Heat stroke is a medical emergency in which the body's temperature rises dangerously high, often above 40 degrees Celsius.
- Heat exhaustion comes first for many people, with heavy sweating, weakness, nausea and dizziness.
- Confusion, fainting or hot skin with little sweating suggest heat stroke.
- Call emergency services and cool the person quickly with cold water, wet cloths and fanning.
- Drinking water, resting in shade and avoiding exertion in the hottest hours help prevent heat illness.

? What are the signs of dehydration?
? How much fluid do you lose with diarrhea?
? When is dehydration dangerous?
- Early signs of dehydration include thirst, dark urine, dry mouth, tiredness and headache.
- Severe dehydration can cause dizziness, a rapid heartbeat, confusion and very little urine.
- Vomiting and diarrhea can cause fluid and salts to be lost quickly, especially in young children and older adults.
- Oral rehydration solutions replace both water and salts more effectively than plain water.
- A baby with few wet diapers or a sunken soft spot on the head needs prompt medical care.

@oncology
? Why is colon cancer screening important?
? At what age should colorectal cancer screening start?
? What screening tests exist for colon cancer?
- Colorectal cancer screening can find precancerous polyps before they turn into cancer, and find cancer early when it is most treatable.
- Many guidelines now recommend starting regular screening at age 45 for people at average risk.
- Options include colonoscopy and stool-based tests that look for hidden blood or abnormal DNA.
- People with a family history or certain conditions may need to start earlier.
- Early colon cancer often causes no symptoms, which is why screening matters.

? What is a mammogram?
? When should women start getting mammograms?
? What happens during breast cancer screening?
- A mammogram is a low-dose X-ray of the breast used to look for early signs of breast cancer.
- Screening can detect tumors too small to be felt.
- Recommended starting ages and intervals differ between countries and guidelines, commonly beginning in the forties or fifties.
- The breast is briefly compressed between two plates, which can be uncomfortable but lasts only seconds.
- Some abnormal results turn out not to be cancer after further imaging.

@pharmacology
? What is the difference between ibuprofen and acetaminophen?
? How do common over-the-counter pain relievers work?
? Is paracetamol the same as ibuprofen?
- Acetaminophen, called paracetamol in many countries, relieves pain and fever but does little for inflammation.
- Ibuprofen is a nonsteroidal anti-inflammatory drug that reduces pain, fever and inflammation.
- Ibuprofen can irritate the stomach and is not suitable for some people with kidney problems or certain heart conditions.
- Too much acetaminophen can seriously damage the liver, so the label's maximum daily dose matters.
- Checking the ingredients of combination cold remedies helps avoid taking the same drug twice.

? What are generic drugs?
? Are generic medicines as effective as brand-name drugs?
? Why are generic drugs cheaper?
- A generic drug contains the same active ingredient as the brand-name medicine and works the same way in the body.
- Regulators require generics to show they deliver the drug to the body in an equivalent way.
- Inactive ingredients such as fillers and colors can differ.
- Generics are cheaper because their makers do not repeat the original clinical trials or pay for the original research.
- Pharmacists can explain whether a switch to a generic is suitable.
"""

# ---------------------------------------------------------------------------------------------------------------
# Brain Rot: high-quality informative texts (label 1). "@topic" then one subject per block of "- " sentences; every
# sentence stands on its own, and one subject yields up to two texts built from disjoint sentences.
# ---------------------------------------------------------------------------------------------------------------

QUALITY_SUBJECTS = """
@science
- Honey keeps for a very long time because it is low in water and fairly acidic, which makes it hard for microbes to grow in it.
- Bees add an enzyme to nectar that slowly produces small amounts of hydrogen peroxide, which also discourages bacteria.
- Archaeologists have reported finding honey in ancient Egyptian tombs that had not spoiled in thousands of years.
- Honey can crystallize over time, but crystallization is a physical change rather than a sign of spoilage.
- Gently warming a jar of crystallized honey in a bowl of hot water turns it liquid again.
- Honey should not be given to babies under one year old because it can contain spores that cause infant botulism.

- Octopuses have three hearts: two pump blood through the gills and one pumps it around the rest of the body.
- Octopus blood is blue because it uses a copper-based molecule called hemocyanin to carry oxygen.
- Much of an octopus's nervous system is in its arms, which can react to touch and taste with some independence from the brain.
- Octopuses can change the color and texture of their skin in a fraction of a second to blend in with their surroundings.
- Most octopus species live only one to two years.
- In experiments, octopuses have learned to open jars and navigate simple mazes.

- Lightning is a giant electrical discharge that happens when charge separates inside storm clouds.
- A lightning bolt heats the surrounding air to temperatures several times hotter than the surface of the sun.
- Thunder is the sound of air expanding explosively around a lightning channel.
- Because light travels much faster than sound, counting the seconds between a flash and its thunder and dividing by three gives the distance in kilometers.
- If thunder can be heard, the storm is close enough for lightning to be a danger, and a hard-topped car or a solid building offers protection.
- Lightning can and often does strike the same place more than once, especially tall structures.

- Black holes form when matter is squeezed into such a small space that gravity prevents even light from escaping.
- The boundary around a black hole beyond which nothing can return is called the event horizon.
- Stellar black holes form from the collapse of massive stars, while supermassive black holes sit at the centers of large galaxies.
- The Milky Way has a supermassive black hole called Sagittarius A* with about four million times the mass of the sun.
- Black holes do not roam around swallowing everything; far from one, its gravity behaves like that of any object with the same mass.
- Gravitational waves from merging black holes were first detected directly in 2015.

- Dopamine is a chemical messenger in the brain that plays a central role in motivation, learning and movement.
- Dopamine is often described as a pleasure chemical, but researchers see it more as a signal about expected rewards that drives us to seek them.
- Parkinson's disease involves the loss of dopamine-producing neurons in a region of the brain that helps control movement.
- So-called dopamine detox trends oversimplify the science, since the brain's dopamine levels cannot simply be reset by avoiding phones for a weekend.
- Reducing distracting habits can still be useful, but the benefit comes from changing behavior rather than from flushing out a chemical.

- Vaccines work by showing the immune system a harmless version or piece of a germ so it can prepare defenses in advance.
- Smallpox, which killed hundreds of millions of people over the centuries, was declared eradicated in 1980 after a global vaccination campaign.
- Herd immunity occurs when enough people in a community are immune that a disease struggles to spread, protecting those who cannot be vaccinated.
- Before a vaccine is approved, it goes through laboratory research and several phases of clinical trials to test safety and effectiveness.
- Monitoring continues after approval so that rare side effects can be detected.

- DNA is the molecule that carries genetic instructions in all known living organisms.
- Human DNA is organized into 23 pairs of chromosomes inside the nucleus of most cells.
- If the DNA from a single human cell were stretched out, it would be about two meters long.
- The claim that humans share half their DNA with bananas is misleading: many basic cellular genes are shared across life, but the overall genomes are very different.
- The Human Genome Project produced the first nearly complete sequence of human DNA in the early 2000s.

- Quantum mechanics describes how matter and energy behave at the scale of atoms and subatomic particles.
- At the scale of atoms, particles such as electrons show wave-like behavior, producing interference patterns in experiments.
- Quantum effects underlie everyday technologies, including lasers, transistors and magnetic resonance imaging.
- Quantum mechanics does not mean that anything is possible; its predictions are precise and have been tested to extraordinary accuracy.
- Quantum computers use quantum bits that can represent combinations of states, which may speed up certain calculations.

- The moon is slowly moving away from Earth at about 3.8 centimeters per year, a rate measured by bouncing lasers off reflectors left by Apollo astronauts.
- The same side of the moon always faces Earth because its rotation is synchronized with its orbit.
- The far side of the moon is not permanently dark; it gets as much sunlight as the near side over a month.
- The leading theory is that the moon formed from debris after a Mars-sized body collided with the young Earth.
- Twelve astronauts walked on the moon between 1969 and 1972.

- Earthquakes happen when stress built up along faults in Earth's crust is suddenly released.
- The point underground where an earthquake starts is called the focus, and the point on the surface above it is the epicenter.
- Earthquake magnitude scales are logarithmic, so each whole number step represents roughly 32 times more energy released.
- Most earthquakes occur along the boundaries of tectonic plates, such as the Pacific Ring of Fire.
- During shaking, the common advice is to drop to the ground, take cover under sturdy furniture and hold on.

- The human eye can distinguish an enormous range of colors using just three types of cone cells.
- Each type of cone cell is most sensitive to a different range of wavelengths, roughly corresponding to red, green and blue light.
- Color blindness most often results from a missing or altered cone type and is much more common in men than in women.
- Rod cells are far more sensitive than cones and allow vision in dim light, but they do not detect color.
- The blind spot in each eye is where the optic nerve leaves the retina, and the brain fills in the gap.

@nature
- Trees in a forest can be connected underground by networks of fungi that grow around and into their roots.
- In the partnership between roots and fungi, called mycorrhiza, fungi supply water and minerals while trees supply sugars made by photosynthesis.
- Most land plants form mycorrhizal partnerships of some kind.
- Some studies suggest that carbon and chemical signals can move between trees through fungal networks, though how important this is remains debated.
- Healthy soil fungi make forests more resilient to drought.

- Coral reefs are built by tiny animals called coral polyps, which secrete skeletons of calcium carbonate.
- Many corals get most of their energy from algae living inside their tissues that photosynthesize.
- When water gets too warm, corals expel these algae and turn white, a process known as coral bleaching.
- Reefs cover a tiny fraction of the ocean floor but support roughly a quarter of all known marine species.
- Coral reefs also protect coastlines by breaking up waves before they reach the shore.

- Monarch butterflies in eastern North America migrate thousands of kilometers to spend the winter in the mountains of central Mexico.
- No single monarch makes the full round trip; the journey north is completed over several generations.
- Monarch caterpillars feed only on milkweed, which makes them taste bad to many predators.
- Loss of milkweed and of winter forest habitat has contributed to large declines in monarch numbers.
- Planting native milkweed is one way gardeners help monarchs.

- Wolves live in family groups called packs, usually made up of a breeding pair and their offspring.
- The old idea of an alpha wolf fighting its way to the top came largely from studies of unrelated captive wolves.
- In the wild, the so-called alpha wolves are simply the parents of the pack.
- The return of wolves to Yellowstone National Park in 1995 changed how elk used the landscape, though scientists still debate the size of the wider effects.
- Wolves communicate through howls, scent marking and body language.

@history
- The hashtag symbol was used on telephone keypads long before social media and is also called the pound sign or octothorpe.
- In 2007, designer Chris Messina suggested using the symbol to group conversations on Twitter.
- Twitter began turning hashtags into clickable links in 2009.
- Hashtags made it easier to follow events in real time, from natural disasters to protests.
- Hashtags spread quickly to other social networks and into advertising.

- The Great Wall of China is not a single wall but a series of fortifications built and rebuilt over many centuries.
- Most of the well-preserved sections of the Great Wall seen by visitors today were built during the Ming dynasty.
- The popular claim that the Great Wall is visible from the moon with the naked eye is false.
- Builders of the Great Wall used local materials, including rammed earth, stone, wood and later brick.
- The Great Wall's purpose included controlling trade and migration as well as defense.

- The ancient Library of Alexandria in Egypt was one of the largest and most important libraries of the ancient world.
- Scholars at Alexandria made advances in mathematics, astronomy and medicine.
- The Library of Alexandria was not destroyed in a single fire; it declined over centuries through funding cuts, political turmoil and damage.
- Eratosthenes, who worked at Alexandria, estimated Earth's circumference with surprising accuracy using shadows and geometry.
- Copying texts by hand was the only way to reproduce books, so collections were extremely valuable.

- The Black Death was a pandemic of plague that swept through Asia, the Middle East and Europe in the mid-fourteenth century.
- The Black Death is estimated to have killed between a third and a half of Europe's population within a few years.
- The plague was caused by the bacterium Yersinia pestis, which could be carried by fleas living on rodents.
- Labor shortages after the Black Death raised wages and weakened the feudal system in parts of Europe.
- The word quarantine comes from an Italian word for forty days, the period ships were isolated during plague outbreaks.

- The Rosetta Stone is a stone slab inscribed in 196 BCE with the same decree in three scripts: hieroglyphic, Demotic and ancient Greek.
- Because scholars could read the Greek text, the Rosetta Stone provided a key to deciphering Egyptian hieroglyphs.
- Jean-François Champollion announced his breakthrough in reading hieroglyphs in 1822.
- The Rosetta Stone was found in 1799 by French soldiers near the town of Rashid, also called Rosetta.
- The Rosetta Stone has been displayed at the British Museum since the early nineteenth century.

- The first successful vaccine was developed by Edward Jenner in 1796, using material from cowpox to protect against smallpox.
- The word vaccine comes from the Latin word vacca, meaning cow.
- Before Jenner, people in several parts of the world practiced variolation, deliberately infecting people with mild smallpox.
- Jenner's method was safer than variolation and spread widely within a few years.
- Louis Pasteur later developed vaccines against anthrax and rabies.

- Ancient Roman concrete has survived for around two thousand years in structures such as the Pantheon in Rome.
- Roman builders mixed lime with volcanic ash, which reacts chemically to form strong, durable minerals.
- Roman marine concrete actually grew stronger in seawater as new crystals formed in its pores.
- The dome of the Pantheon is still the largest unreinforced concrete dome in the world.
- Researchers study Roman concrete in the hope of making modern concrete more durable.

- The Apollo 13 mission in 1970 suffered an oxygen tank explosion on the way to the moon.
- The Apollo 13 crew used the lunar module as a lifeboat, since its oxygen and power were intact.
- During Apollo 13, engineers on the ground devised a way to fit square carbon dioxide filters into round sockets using materials available on the spacecraft.
- The Apollo 13 astronauts looped around the moon and returned safely to Earth after nearly six days.
- Apollo 13 is often described as a successful failure because the landing was abandoned but everyone survived.

- The invention of the mechanical clock in medieval Europe changed how people organized work and daily life.
- Early mechanical clocks in the thirteenth and fourteenth centuries were large tower clocks with no minute hand.
- The pendulum clock, developed by Christiaan Huygens in 1656, made timekeeping dramatically more accurate.
- Accurate portable clocks later allowed sailors to determine longitude at sea.
- Standard time zones were adopted in the late nineteenth century, largely because of railway schedules.

- The printing press spread rapidly across Europe after Johannes Gutenberg developed movable metal type around 1450.
- Within fifty years of Gutenberg's invention, presses were operating in more than two hundred European towns.
- Printed books became cheaper, helping literacy spread beyond the clergy and wealthy elites.
- The Gutenberg Bible, printed in the 1450s, is one of the earliest major books printed with movable type in Europe.
- Pamphlets produced on printing presses allowed new ideas to spread faster than authorities could control them.

@practical
- Compound interest means earning interest on previously earned interest, so savings grow faster the longer they are left untouched.
- The rule of 72 estimates how long it takes money to double: divide 72 by the annual interest rate.
- At 6 percent annual growth, money doubles in roughly 12 years.
- Compounding also works against borrowers, which is why high-interest credit card debt grows so quickly.
- Starting to save early usually matters more than saving large amounts later.

- Washing hands with soap for at least 20 seconds removes germs far more effectively than a quick rinse.
- Soap molecules have one end that binds to water and another that binds to oils, which lets them lift grease and germs off the skin.
- Many viruses are surrounded by a fatty envelope that soap can break apart.
- When washing hands, the backs of the hands, the thumbs and the areas under the nails are often missed.
- Drying hands thoroughly also matters, because germs spread more easily from wet skin.

- A fire extinguisher can put out a small fire if it is used quickly and correctly.
- The PASS technique summarizes how to use a fire extinguisher: pull the pin, aim at the base of the fire, squeeze the handle and sweep from side to side.
- Water should never be used on a grease fire, because it can make burning oil spray and spread.
- A smothering lid is the safest way to put out a small pan fire on the stove.
- If a fire is spreading or the room is filling with smoke, get out and call emergency services rather than fighting it.

- Sleep is essential for memory, because the brain replays and strengthens what was learned during the day.
- Adults generally need seven to nine hours of sleep per night, while teenagers need more.
- Regular sleep and wake times help keep the body's internal clock stable.
- Bright light in the morning helps set the body clock, while bright screens late at night can delay sleep.
- Caffeine has a half-life of several hours, so an afternoon coffee can still affect sleep at night.

- Food labels can help compare products, but serving sizes differ, so it is useful to check the amount per 100 grams.
- Ingredients are listed in order of weight, so the first few make up most of the product.
- Sugar appears under many names on labels, including sucrose, glucose syrup and fruit juice concentrate.
- A food marketed as low fat is not necessarily low in calories, since sugar is sometimes added to improve taste.
- Use-by dates relate to safety, while best-before dates relate to quality.

- To check whether a news story is reliable, it helps to look for the original source of the claim.
- A quick search of other reputable outlets shows whether a story has been independently confirmed.
- Old photos are often reshared with new, misleading captions, and reverse image search can reveal where a picture first appeared.
- Headlines designed to provoke strong emotion are more likely to be shared without being read.
- Checking the date of an article prevents old news from being mistaken for current events.

- Strong passwords are long, unique and hard to guess, and a sequence of several random words can be both strong and memorable.
- Reusing passwords is risky, because a leak at one website lets attackers try the same login elsewhere.
- Password managers generate and store unique passwords so that users only need to remember one master password.
- Two-factor authentication adds a second check, such as a code from an app, making stolen passwords far less useful.
- Phishing messages often imitate trusted companies to trick people into entering passwords on fake sites.

- Muscle is built through progressive overload, gradually increasing the demands placed on the muscles.
- Muscles repair and grow stronger during rest, not during the workout itself.
- Adequate protein and sleep support the recovery process after strength training.
- Beginners often gain strength quickly at first, largely because the nervous system learns to recruit muscles more efficiently.
- Lifting with good form matters more than lifting heavy weights early on.

@geography
- The Sahara is the largest hot desert in the world, covering much of North Africa.
- Thousands of years ago, during the African Humid Period, parts of the Sahara were green grassland with lakes.
- Rock art in the Sahara shows giraffes, cattle and swimmers from a wetter era.
- Dust from the Sahara crosses the Atlantic and delivers nutrients such as phosphorus to the Amazon rainforest.
- Most of the Sahara is rocky plateau or gravel plain rather than sand dunes.

- The Mariana Trench in the western Pacific contains the deepest known point in the ocean, the Challenger Deep.
- The Challenger Deep is nearly 11,000 meters below sea level, deeper than Mount Everest is tall.
- Water pressure at the bottom of the Mariana Trench is more than a thousand times the pressure at the surface.
- The Mariana Trench formed where one tectonic plate sinks beneath another.
- Only a handful of crewed dives have reached the bottom of the Challenger Deep.

- The Amazon River carries more water than any other river, discharging roughly a fifth of all river water that reaches the oceans.
- For most of its length, there are no bridges across the Amazon River.
- The Amazon basin covers about seven million square kilometers across several South American countries.
- During the wet season, the Amazon floods vast areas of forest, and fish swim among the trees.
- Whether the Amazon or the Nile is the longest river depends on how the sources and mouths are measured.

- Iceland sits on the Mid-Atlantic Ridge, where the North American and Eurasian plates are slowly pulling apart.
- Because of this plate boundary, Iceland has frequent volcanic activity and abundant geothermal heat.
- Most homes in Iceland are heated with geothermal water.
- The Thingvellir valley lets visitors walk in a rift between two tectonic plates.
- New land forms in Iceland when lava erupts and cools.

@technology
- The internet and the World Wide Web are not the same thing: the internet is the global network, and the web is a system of linked pages that runs on it.
- Tim Berners-Lee proposed the World Wide Web in 1989 while working at CERN.
- The first website went online in 1991 and explained what the web was.
- Email and many other services predate the web and also run over the internet.
- Web pages are written in HTML and fetched using the HTTP protocol.

- GPS receivers work out their position by measuring how long signals take to arrive from several satellites.
- A GPS receiver needs signals from at least four satellites to calculate a position in three dimensions and correct its own clock error.
- GPS satellites carry extremely precise atomic clocks, because an error of one microsecond would shift the position by about 300 meters.
- GPS calculations must account for effects predicted by Einstein's theories of relativity.
- Phones often combine GPS with Wi-Fi and cell tower data to find a location more quickly.

- Recycling aluminum cans saves most of the energy needed to make aluminum from raw ore.
- Aluminum can be recycled again and again without losing its quality.
- Glass can also be recycled indefinitely, although color sorting matters.
- Plastic recycling is more limited, because many plastics degrade with each cycle and mixed plastics are hard to separate.
- Food left in containers can contaminate a batch of recyclables, so rinsing them helps.

- Lithium-ion batteries power most phones, laptops and electric cars because they store a lot of energy for their weight.
- Battery capacity gradually declines with charge cycles and with time, especially when the battery is kept hot.
- Keeping a phone battery between roughly 20 and 80 percent can reduce wear, though modern devices manage charging well on their own.
- Damaged lithium-ion batteries can overheat and catch fire, so swollen batteries should be handled carefully and recycled properly.
- Researchers are developing alternatives to lithium-ion batteries, such as sodium-ion and solid-state batteries.

@language
- English has borrowed words from hundreds of languages over its history.
- Words such as algebra and coffee came into English through Arabic and Turkish.
- After the Norman Conquest of 1066, thousands of French words entered English, especially in law, government and food.
- Because of the Norman Conquest, English often has pairs like cow and beef, where the animal's name is Germanic and the meat's name is French.
- Shakespeare is credited with the first recorded use of many words, although some probably existed in speech before him.

- Sign languages are complete natural languages with their own grammar, not simply gestures for spoken words.
- American Sign Language and British Sign Language are different languages that are not mutually intelligible.
- Facial expressions and body movements carry grammatical meaning in sign languages.
- Deaf children exposed to sign language from birth reach language milestones on a similar schedule to hearing children learning speech.
- Nicaraguan Sign Language emerged in the 1970s and 1980s among deaf children brought together in schools, giving linguists a rare view of a language being born.

@economics
- Inflation is the general rise in prices over time, which reduces the purchasing power of money.
- Central banks often raise interest rates to slow inflation by making borrowing more expensive.
- Moderate, predictable inflation is considered manageable, while very high inflation can disrupt savings and planning.
- Deflation, a general fall in prices, can also be harmful if it causes people to delay spending.
- Inflation is often measured with a consumer price index that tracks the cost of a typical basket of goods.

- Supply and demand describes how prices are set when buyers and sellers meet in a market.
- When demand for a product rises and supply stays the same, its price tends to rise.
- Higher prices encourage producers to supply more, which can eventually bring prices down again.
- Price controls that hold prices far below the market level can lead to shortages.
- The supply and demand model is a simplification, but it explains many everyday price changes, such as expensive flights during holidays.
"""

# Building blocks of the junk posts (label 0).
JUNK_HOOKS = [
    "you won't BELIEVE what happened next",
    "this is NOT a drill",
    "wait for it...",
    "nobody is talking about this",
    "I can't stop laughing at this",
    "POV: you just realized it's Monday again",
    "tell me why this is so accurate",
    "not me crying at",
    "bro really said",
    "ok but why is nobody talking about",
    "the way I SCREAMED",
    "this changed my life fr",
    "no because",
    "literally obsessed with",
    "main character energy",
    "it's giving",
    "living rent free in my head:",
    "hear me out",
    "unpopular opinion:",
    "BREAKING:",
    "just found out",
    "me at 3am:",
    "day 47 of asking for",
    "if you know you know",
    "sound on 🔊",
    "STOP scrolling",
    "read that again",
    "y'all are sleeping on",
    "I'm not okay after",
    "the audacity of",
    "caught in 4k:",
    "plot twist:",
    "core memory unlocked:",
    "this lives in my brain now",
    "who else remembers",
    "I was today years old when",
    "rate this 1-10",
    "this is the sign you needed",
    "can we talk about",
    "how is this even real",
]

JUNK_THINGS = [
    "this cat",
    "my landlord",
    "the new phone",
    "this pasta hack",
    "that one teacher",
    "the group chat",
    "my gym crush",
    "this sneaker drop",
    "the season finale",
    "this 5 second trick",
    "my ex",
    "this budget hack",
    "the airport lounge",
    "pineapple pizza",
    "this dance",
    "the new album",
    "this life hack",
    "the trailer",
    "my roommate",
    "this random guy on the bus",
    "the weather today",
    "this cereal",
    "my boss",
    "this goat",
    "the vending machine at work",
    "grandma's new tablet",
    "this parking job",
    "the Wi-Fi at my school",
    "my cousin's wedding",
    "this frog",
    "the microwave at 2am",
    "the last episode",
    "this hot sauce",
    "the neighbor's dog",
    "my sourdough starter",
    "this gaming setup",
    "these new earbuds",
    "the self-checkout",
]

JUNK_REACTIONS = [
    "is actually unhinged",
    "just ended me",
    "ate and left no crumbs",
    "is NOT okay",
    "is living its best life",
    "said what it said",
    "was NOT on my bingo card",
    "deserves an award",
    "is sending me",
    "hits different at night",
    "is my whole personality now",
    "has no business being this good",
    "is pure chaos",
    "broke the internet",
    "really did that",
    "is the moment",
    "should be illegal",
    "understood the assignment",
    "is elite",
    "is so cursed",
    "changed the game",
    "made my whole week",
    "is peak comedy",
]

JUNK_SCIENCE = [
    "scientists HATE this one trick",
    "NASA doesn't want you to see this",
    "black holes are literally cosmic vacuum cleaners??",
    "quantum physics explains why you're always tired",
    "your DNA is 50% banana 🍌 think about it",
    "this dopamine detox will rewire your brain in 3 days",
    "the moon is fake and here's the proof",
    "this water is 1000x more hydrating than normal water",
    "doctors are SPEECHLESS",
    "ancient aliens built this?? 👽",
    "the ocean is way deeper than they tell you",
    "the sun is actually white and nobody told us",
    "gravity is just a theory tho",
    "brain hack: 97% of people fail this test",
    "this vitamin cured my laziness",
    "your phone is reading your dreams",
    "einstein would be shook",
    "the pyramids were power plants??",
    "this one food melts belly fat overnight",
    "they found something on Mars and went quiet",
    "your brain only uses 10% and here's how to unlock the rest",
    "this frequency heals your cells",
    "sharks are older than trees and I'm not ok",
    "lightning never strikes twice... or does it 👀",
    "octopuses are aliens confirmed",
    "the earth is hollow, look it up",
]

JUNK_VAPID = [
    "Fun fact: the sun is hot. Like REALLY hot.",
    "Did you know water is wet? mind blown.",
    "Mondays are the worst, am I right?",
    "Coffee is basically my personality now.",
    "Sleep is for the weak but also I'm tired.",
    "Science is so cool honestly.",
    "History is just old news lol.",
    "Space is big. Like, really big.",
    "Math class be like: why.",
    "Nature is healing, the ducks are back.",
    "Apparently trees are important or whatever.",
    "Learned a fact today and already forgot it.",
    "Cats are just tiny lions, fight me.",
    "Imagine being a cloud. Couldn't be me.",
    "Dinosaurs were just big chickens, no thoughts.",
    "The moon looked kinda big tonight ngl.",
]

JUNK_RANTS = [
    "ok so I was literally just minding my business and then",
    "someone explain to me why every single time I open this app",
    "I've watched this 47 times and it still gets me",
    "not to be dramatic but this is the best thing that has ever happened on the internet",
    "if this gets 1000 likes I'll post the full video",
    "they really thought we wouldn't notice",
    "I need everyone to stop what they are doing and look at this",
    "my mom sent me this and now I can't sleep",
    "imagine waking up and choosing violence like this",
    "I told my friends about this and they didn't believe me",
    "the algorithm knows me too well and it's scary",
    "I was today years old and I'm still processing",
    "I refuse to believe this is real",
    "this is the content I signed up for",
    "honestly can't tell if this is genius or a cry for help",
    "every time I think the internet can't get weirder",
]

JUNK_CTAS = [
    "like and share!!",
    "follow for part 2",
    "tag someone who needs this",
    "link in bio 👇",
    "comment YES if you agree",
    "drop a 🔥 if you agree",
    "RT if you remember",
    "share before they delete this",
    "smash that follow button",
    "turn on notifications",
    "don't scroll past",
    "save this for later",
    "retweet to win",
    "reply with your sign",
    "duet this",
    "follow for more facts",
    "like if you're still watching",
    "send this to your bestie",
    "comment your favorite emoji",
    "full vid on my page",
]

JUNK_GIVEAWAYS = [
    "GIVEAWAY 🎁 win a free iPhone",
    "first 100 people get $50",
    "free gift card, just click the link",
    "giving away 1000 dollars to my followers",
    "DM me WIN to claim your prize",
    "free followers, no scam 100% legit",
    "win a PS5 just by following",
    "claim your reward before midnight",
    "spin the wheel and WIN",
]

JUNK_CRYPTO = [
    "$MOON to the moon 🚀🚀",
    "this coin is going 100x",
    "get in before it's too late",
    "not financial advice but",
    "wagmi",
    "buy the dip",
    "diamond hands 💎🙌",
    "next 1000x gem",
    "the bears are NOT ready",
    "few understand this",
    "we're still early",
]

JUNK_CAPS = [
    "THIS IS INSANE",
    "I'M SCREAMING",
    "OMG OMG OMG",
    "WHAT",
    "NO WAY",
    "UNREAL",
    "LITERALLY ME",
    "I CAN'T",
    "GAME OVER",
    "WE ARE SO BACK",
    "IT'S OVER",
    "HOLD UP",
    "BIGGEST W",
    "CRAZY",
    "NOT AGAIN",
]

JUNK_INTERJECTIONS = [
    "lmaooo",
    "omg",
    "bruh",
    "fr fr",
    "no cap",
    "ngl",
    "smh",
    "istg",
    "lowkey",
    "deadass",
    "help",
    "ugh",
    "sheesh",
    "yikes",
    "ok so",
    "ALSO",
    "WHY",
    "lol",
    "tbh",
    "rip",
]

JUNK_EMOJI = [
    "😂😂😂",
    "😭",
    "💀💀",
    "🔥🔥🔥",
    "😱",
    "👀",
    "🚀",
    "💯",
    "🙏",
    "✨",
    "😤",
    "🤯",
    "👇👇",
    "❤️",
    "🤣",
    "😳",
    "🫠",
    "💅",
    "🥲",
    "🙌",
    "😵‍💫",
    "👏👏",
]

JUNK_HASHTAGS = [
    "#fyp",
    "#viral",
    "#foryou",
    "#trending",
    "#mindblown",
    "#lifehack",
    "#nofilter",
    "#blessed",
    "#mood",
    "#relatable",
    "#sciencefacts",
    "#crypto",
    "#giveaway",
    "#tbt",
    "#goals",
    "#motivation",
    "#grindset",
    "#wow",
    "#omg",
    "#facts",
    "#explorepage",
    "#instagood",
    "#memes",
    "#lol",
    "#fail",
    "#win",
    "#hustle",
    "#space",
    "#nasa",
    "#brainhack",
    "#health",
    "#history",
    "#learnontiktok",
    "#didyouknow",
]


# ---------------------------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------------------------

NAMES = [
    "Ana",
    "Ben",
    "Chloe",
    "Dev",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Imani",
    "Jonas",
    "Keiko",
    "Luis",
    "Maya",
    "Noah",
    "Olu",
    "Priya",
    "Quinn",
    "Rosa",
    "Sam",
    "Tariq",
    "Uma",
    "Victor",
    "Wen",
    "Yusuf",
    "Zoe",
]


def num(x: float, nd: int = 2) -> str:
    """A number with at most nd decimals, thousands separators, no trailing zeros."""
    s = f"{x:,.{nd}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def money(x: float) -> str:
    """Dollars: whole amounts without cents, otherwise two decimals."""
    cents = round(x * 100)
    if cents % 100 == 0:
        return f"${cents // 100:,}"
    return f"${cents / 100:,.2f}"


def cap_first(s: str) -> str:
    return s[:1].upper() + s[1:] if s else s


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def word_count(s: str) -> int:
    return len(s.split())


# ---------------------------------------------------------------------------------------------------------------
# Howdy! pool: math word problems with computed answers (topic "math")
# ---------------------------------------------------------------------------------------------------------------


def _m_discount(rng):
    item = rng.choice(
        [
            "jacket",
            "pair of running shoes",
            "desk lamp",
            "backpack",
            "coffee maker",
            "board game",
            "winter coat",
            "pair of headphones",
            "bike helmet",
            "suitcase",
        ]
    )
    price = rng.randrange(20, 185, 5)
    pct = rng.choice([10, 15, 20, 25, 30, 40])
    disc = price * pct / 100
    final = price - disc
    prompt = rng.choice(
        [
            f"A {item} costs {money(price)} and is on sale for {pct}% off. What is the sale price?",
            f"How much will I pay for a {money(price)} {item} if the store takes {pct}% off?",
            f"The price tag on a {item} says {money(price)}, and there is a {pct} percent discount at the register. What do I pay?",
        ]
    )
    comp = rng.choice(
        [
            f"{pct}% of {money(price)} is {money(disc)}, so the sale price is {money(price)} - {money(disc)} = {money(final)}.",
            f"Taking {pct}% off means you pay {100 - pct}% of the price: {money(price)} × {num((100 - pct) / 100)} = {money(final)}. You save {money(disc)}.",
        ]
    )
    return prompt, comp


def _m_speed(rng):
    who = rng.choice(["A train", "A bus", "A delivery van", "My car", "A ferry", "A long-distance coach"])
    hours = rng.choice([1.5, 2, 2.5, 3, 4, 5])
    speed = rng.randrange(40, 121, 10)
    dist = speed * hours
    if rng.random() < 0.8:
        prompt = rng.choice(
            [
                f"{who} travels {num(dist)} kilometers in {num(hours)} hours. What is its average speed?",
                f"If a trip of {num(dist)} km takes {num(hours)} hours, what was the average speed?",
            ]
        )
        comp = f"Average speed is distance divided by time: {num(dist)} km ÷ {num(hours)} h = {speed} km/h."
        if rng.random() < 0.8:
            comp += " That is an average, so the actual speed was probably higher on open stretches and lower in traffic or at stops."
    else:
        prompt = rng.choice(
            [
                f"How long does it take to drive {num(dist)} km at an average speed of {speed} km/h?",
                f"{who} averages {speed} km per hour. How long will a {num(dist)} km journey take?",
            ]
        )
        h = int(hours)
        mins = round((hours - h) * 60)
        hm = plural(h, "hour") + (f" and {mins} minutes" if mins else "")
        comp = f"Time equals distance divided by speed: {num(dist)} ÷ {speed} = {num(hours)} hours, which is {hm}."
        if rng.random() < 0.8:
            comp += " Add extra time for breaks and traffic if you are planning a real trip."
    return prompt, comp


def _m_recipe(rng):
    dish, ing = rng.choice(
        [
            ("pancake", "flour"),
            ("lentil soup", "lentils"),
            ("banana bread", "flour"),
            ("fried rice", "rice"),
            ("granola", "oats"),
            ("pasta bake", "pasta"),
            ("muffin", "sugar"),
            ("curry", "chickpeas"),
        ]
    )
    serves = rng.choice([4, 6, 8])
    target = rng.choice([n for n in (2, 3, 5, 10, 12) if n != serves])
    per = rng.randrange(20, 95, 5)
    total = per * serves
    prompt = rng.choice(
        [
            f"A {dish} recipe for {serves} people uses {total} grams of {ing}. How much {ing} do I need for {target} people?",
            f"My {dish} recipe serves {serves} and calls for {total} g of {ing}. How do I scale it for {target} servings?",
        ]
    )
    comp = rng.choice(
        [
            f"First find the amount per person: {total} ÷ {serves} = {per} grams. Then multiply by {target}: {per} × {target} = {per * target} grams of {ing}.",
            f"Scale by the ratio {target}/{serves}: {total} g × {target} ÷ {serves} = {per * target} g of {ing}. Scale the other ingredients by the same factor.",
        ]
    )
    return prompt, comp


def _m_average(rng):
    kind = rng.choice(["test scores", "quiz marks", "bowling scores", "weekly running distances in km"])
    n = rng.choice([4, 5])
    vals = [rng.randrange(60, 100) if "km" not in kind else rng.randrange(8, 40) for _ in range(n)]
    s = sum(vals)
    mean = s / n
    listing = ", ".join(str(v) for v in vals[:-1]) + f" and {vals[-1]}"
    prompt = rng.choice(
        [
            f"My {kind} this term were {listing}. What is my average?",
            f"What is the mean of these {kind}: {listing}?",
        ]
    )
    comp = f"Add them up: {' + '.join(str(v) for v in vals)} = {s}. Then divide by {n}: {s} ÷ {n} = {num(mean)}."
    if rng.random() < 0.8:
        comp += " The median, the middle value when sorted, can be a useful second look if one number is unusually high or low."
    return prompt, comp


def _m_area(rng):
    if rng.random() < 0.8:
        length = rng.choice([3, 3.5, 4, 4.5, 5, 5.5, 6])
        width = rng.choice([2.5, 3, 3.5, 4])
        price = rng.choice([18, 22, 25, 30, 35, 40])
        area = length * width
        prompt = rng.choice(
            [
                f"A rectangular room measures {num(length)} m by {num(width)} m. How much will flooring cost at {money(price)} per square meter?",
                f"How much flooring do I need for a {num(length)} × {num(width)} meter room, and what will it cost at {money(price)} per m²?",
            ]
        )
        comp = f"The area is {num(length)} × {num(width)} = {num(area)} square meters, so the flooring costs {num(area)} × {money(price)} = {money(area * price)}."
        if rng.random() < 0.8:
            comp += " It is common to buy about 10 percent extra to allow for cutting and waste."
    else:
        length = rng.randrange(6, 25)
        width = rng.randrange(3, 15)
        per = 2 * (length + width)
        prompt = rng.choice(
            [
                f"How much fencing do I need to go around a garden that is {length} m long and {width} m wide?",
                f"What is the perimeter of a rectangular yard measuring {length} meters by {width} meters?",
            ]
        )
        comp = f"The perimeter of a rectangle is 2 × (length + width) = 2 × ({length} + {width}) = {per} meters."
        if rng.random() < 0.8:
            comp += " Subtract the width of any gate you plan to install."
    return prompt, comp


def _m_bill(rng):
    bill = rng.randrange(45, 260)
    tip = rng.choice([15, 18, 20])
    people = rng.choice([2, 3, 4, 5, 6])
    total = bill * (100 + tip) / 100
    each = total / people
    prompt = rng.choice(
        [
            f"Our dinner bill is {money(bill)}. If we leave a {tip}% tip and split it between {people} people, how much does each person pay?",
            f"{people} friends share a {money(bill)} restaurant bill plus a {tip} percent tip. What is each share?",
        ]
    )
    comp = f"The tip is {money(bill * tip / 100)}, so the total is {money(total)}. Divided by {people}, each person pays about {money(each)}."
    if rng.random() < 0.7:
        comp += " If the split does not come out to whole cents, round each share up slightly so the server is not short-changed."
    return prompt, comp


def _m_unit_price(rng):
    thing = rng.choice(
        [
            "batteries",
            "granola bars",
            "rolls of paper towels",
            "cans of tomatoes",
            "bars of soap",
            "bottles of water",
            "tea bags",
        ]
    )
    n1, n2 = rng.sample([4, 6, 8, 10, 12, 20, 24, 40], 2)
    p1 = round(n1 * rng.uniform(0.3, 1.2), 2)
    p2 = round(n2 * rng.uniform(0.3, 1.2), 2)
    u1, u2 = p1 / n1, p2 / n2
    if abs(u1 - u2) < 0.01:
        p2 = round(p2 + 0.5, 2)
        u2 = p2 / n2
    prompt = rng.choice(
        [
            f"Which is the better deal: {n1} {thing} for {money(p1)} or {n2} {thing} for {money(p2)}?",
            f"A store sells a pack of {n1} {thing} for {money(p1)} and a pack of {n2} for {money(p2)}. Which pack is cheaper per item?",
        ]
    )
    better = f"the pack of {n1}" if u1 < u2 else f"the pack of {n2}"
    comp = f"Compare the price per item: {money(p1)} ÷ {n1} ≈ {money(u1)} each, and {money(p2)} ÷ {n2} ≈ {money(u2)} each. So {better} is cheaper per item."
    if rng.random() < 0.8:
        comp += " A bigger pack is only a better deal if you will actually use everything before it expires."
    return prompt, comp


def _m_time(rng):
    start_h = rng.randrange(9, 21)
    start_m = rng.choice([0, 10, 15, 20, 30, 40, 45, 50])
    dur = rng.randrange(65, 230, 5)
    end = start_h * 60 + start_m + dur

    def clock(t):
        h, m = divmod(t % (24 * 60), 60)
        suffix = "am" if h < 12 else "pm"
        h12 = h % 12 or 12
        return f"{h12}:{m:02d} {suffix}"

    event = rng.choice(["A movie", "A concert", "A flight", "A football match", "A train journey", "A webinar"])
    hrs = plural(dur // 60, "hour")
    if dur % 60 == 0:
        prompt = f"{event} starts at {clock(start_h * 60 + start_m)} and lasts {hrs}. What time does it end?"
        comp = f"Starting at {clock(start_h * 60 + start_m)} and adding {hrs} brings you to {clock(end)}."
    else:
        prompt = f"{event} starts at {clock(start_h * 60 + start_m)} and lasts {hrs} and {dur % 60} minutes. What time does it end?"
        comp = f"Add the hours first and then the minutes: starting at {clock(start_h * 60 + start_m)}, {hrs} later is {clock(start_h * 60 + start_m + 60 * (dur // 60))}, and {dur % 60} more minutes brings you to {clock(end)}."
    if rng.random() < 0.6:
        comp += " When the minutes pass 60, carry one hour over, just as you would carry a ten in ordinary addition."
    return prompt, comp


def _m_ratio(rng):
    a, b = rng.choice([(1, 3), (1, 4), (2, 3), (1, 2), (3, 5), (1, 5)])
    what = rng.choice(
        [
            ("juice concentrate", "water"),
            ("cement", "sand"),
            ("white paint", "blue paint"),
            ("vinegar", "water"),
            ("rice", "water"),
        ]
    )
    unit_total = rng.choice([600, 800, 1200, 1500, 2000, 2400, 3000])
    parts = a + b
    if unit_total % parts:
        unit_total = parts * (unit_total // parts)
    x, y = unit_total * a // parts, unit_total * b // parts
    prompt = rng.choice(
        [
            f"I need to mix {what[0]} and {what[1]} in a ratio of {a}:{b} to make {unit_total} ml in total. How much of each should I use?",
            f"How much {what[0]} and {what[1]} go into {unit_total} ml of a mixture with a {a} to {b} ratio?",
        ]
    )
    comp = f"A {a}:{b} ratio has {parts} equal parts, so each part is {unit_total} ÷ {parts} = {unit_total // parts} ml. Use {x} ml of {what[0]} and {y} ml of {what[1]}."
    if rng.random() < 0.7:
        comp += f" As a check, {x} + {y} = {unit_total} ml, and {x}:{y} simplifies back to {a}:{b}."
    return prompt, comp


def _m_reading(rng):
    pages = rng.randrange(180, 620, 10)
    per_day = rng.choice([15, 20, 25, 30, 35, 40])
    days = math.ceil(pages / per_day)
    name = rng.choice(NAMES)
    prompt = rng.choice(
        [
            f"If I read {per_day} pages a day, how many days will it take to finish a {pages}-page book?",
            f"{name} reads {per_day} pages every evening. How long will a {pages}-page novel take?",
        ]
    )
    exact = pages / per_day
    if pages % per_day == 0:
        comp = f"{pages} ÷ {per_day} = {days}, so it takes exactly {days} days."
    else:
        comp = f"{pages} ÷ {per_day} ≈ {num(exact, 1)}, so it takes {days} days: {days - 1} full days of reading plus a shorter session on the last day."
    if rng.random() < 0.7:
        comp += f" Reading {per_day + 10} pages a day instead would bring it down to {math.ceil(pages / (per_day + 10))} days."
    return prompt, comp


def _m_fuel(rng):
    cons = rng.choice([4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8, 9])
    dist = rng.randrange(120, 900, 20)
    price = rng.choice([1.55, 1.65, 1.72, 1.8, 1.89, 1.95, 2.05])
    litres = cons * dist / 100
    prompt = rng.choice(
        [
            f"My car uses {num(cons)} liters of fuel per 100 km. How much fuel will a {dist} km trip need, and what will it cost at {money(price)} per liter?",
            f"A road trip is {dist} km long. With fuel consumption of {num(cons)} L/100 km and fuel at {money(price)} a liter, what is the fuel cost?",
        ]
    )
    comp = f"Fuel needed = {num(cons)} × {dist} ÷ 100 = {num(litres)} liters. At {money(price)} per liter, that costs about {money(litres * price)}."
    if rng.random() < 0.8:
        comp += " Highway driving at steady speeds often uses less fuel than the official figure for mixed driving."
    return prompt, comp


def _m_consecutive(rng):
    mid = rng.randrange(8, 140)
    k = rng.choice([3, 5])
    total = mid * k
    nums = list(range(mid - k // 2, mid + k // 2 + 1))
    prompt = rng.choice(
        [
            f"{'Three' if k == 3 else 'Five'} consecutive whole numbers add up to {total}. What are they?",
            f"The sum of {k} consecutive integers is {total}. Find the numbers.",
        ]
    )
    comp = f"The middle number is the average: {total} ÷ {k} = {mid}. So the numbers are {', '.join(str(n) for n in nums[:-1])} and {nums[-1]}."
    if rng.random() < 0.7:
        comp += f" Check: {' + '.join(str(n) for n in nums)} = {total}."
    return prompt, comp


def _m_percent_change(rng):
    old = rng.choice([40, 50, 60, 80, 120, 150, 200, 250, 400])
    pct = rng.choice([p for p in (-30, -25, -20, -10, 5, 10, 15, 20, 25, 40, 50) if old * p % 100 == 0])
    new = old * (100 + pct) // 100
    ctx = rng.choice(
        [
            ("A club's membership went", "members"),
            ("A sunflower grew", "cm"),
            ("A class's average reading speed went", "words per minute"),
            ("Monthly visitors to a small museum went", "visitors"),
        ]
    )
    prompt = f"{ctx[0]} from {old} to {new} {ctx[1]}. What is the percentage change?"
    direction = "increase" if pct > 0 else "decrease"
    comp = f"Percentage change = (new - old) ÷ old × 100 = ({new} - {old}) ÷ {old} × 100 = {pct}%, which is a {abs(pct)}% {direction}."
    if rng.random() < 0.7:
        comp += " Always divide by the starting value; dividing by the new value gives a different and misleading percentage."
    return prompt, comp


def _m_temperature(rng):
    if rng.random() < 0.8:
        c = rng.choice([-10, -5, 0, 5, 10, 15, 20, 25, 30, 35, 40, 100])
        f = c * 9 // 5 + 32
        prompt = rng.choice([f"Convert {c} degrees Celsius to Fahrenheit.", f"What is {c}°C in Fahrenheit?"])
        comp = f"Multiply by 9/5 and add 32: {c} × 9/5 + 32 = {f}°F."
    else:
        f = rng.choice([14, 23, 32, 41, 50, 59, 68, 77, 86, 95, 104, 212])
        c = (f - 32) * 5 // 9
        prompt = rng.choice([f"Convert {f} degrees Fahrenheit to Celsius.", f"What is {f}°F in Celsius?"])
        comp = f"Subtract 32 and multiply by 5/9: ({f} - 32) × 5/9 = {c}°C."
    if rng.random() < 0.8:
        comp += " A quick mental check: water freezes at 0°C or 32°F and boils at 100°C or 212°F at sea level."
    return prompt, comp


def _m_pizza(rng):
    slices = rng.choice([8, 12, 16])
    fracs = [(1, 4), (1, 2), (3, 8), (1, 8), (1, 3), (1, 6), (1, 16)]
    usable = [f for f in fracs if slices * f[0] % f[1] == 0]
    (a1, b1), (a2, b2) = rng.sample(usable, 2)
    e1, e2 = slices * a1 // b1, slices * a2 // b2
    if e1 + e2 >= slices:
        return None
    n1, n2 = rng.sample(NAMES, 2)
    prompt = f"A pizza is cut into {slices} slices. {n1} eats {a1}/{b1} of it and {n2} eats {a2}/{b2} of it. How many slices are left?"
    comp = f"{a1}/{b1} of {slices} slices is {e1}, and {a2}/{b2} of {slices} is {e2}. Together they ate {e1 + e2} slices, so {slices - e1 - e2} slices are left."
    if rng.random() < 0.7:
        comp += f" As a fraction of the whole pizza, that leftover is {slices - e1 - e2}/{slices}."
    return prompt, comp


def _m_simple_interest(rng):
    p = rng.randrange(1000, 10001, 500)
    r = rng.choice([2, 2.5, 3, 4, 5, 6])
    t = rng.choice([2, 3, 4, 5])
    i = p * r * t / 100
    prompt = rng.choice(
        [
            f"What is the simple interest on {money(p)} at {num(r)}% per year for {t} years?",
            f"Using simple interest, how much does {money(p)} earn in {t} years at an annual rate of {num(r)} percent?",
        ]
    )
    comp = f"Simple interest = principal × rate × time = {money(p)} × {num(r / 100, 3)} × {t} = {money(i)}, for a total of {money(p + i)}."
    if rng.random() < 0.7:
        comp += " Simple interest is calculated only on the original amount, unlike compound interest, which also earns interest on past interest."
    return prompt, comp


MATH_GENERATORS = [
    _m_discount,
    _m_speed,
    _m_recipe,
    _m_average,
    _m_area,
    _m_bill,
    _m_unit_price,
    _m_time,
    _m_ratio,
    _m_reading,
    _m_fuel,
    _m_consecutive,
    _m_percent_change,
    _m_temperature,
    _m_pizza,
    _m_simple_interest,
]

# ---------------------------------------------------------------------------------------------------------------
# Finance–Medical pool: finance calculations with computed answers
# ---------------------------------------------------------------------------------------------------------------


def _f_compound(rng):
    p = rng.choice([1000, 2000, 2500, 5000, 8000, 10000, 15000, 20000])
    r = rng.choice([3, 4, 5, 6, 7, 8])
    t = rng.choice([5, 10, 15, 20, 25, 30])
    fv = p * (1 + r / 100) ** t
    prompt = rng.choice(
        [
            f"If I invest {money(p)} at {r}% a year, compounded annually, how much will I have after {t} years?",
            f"How much will {money(p)} grow to in {t} years with a {r} percent annual return?",
            f"I put {money(p)} into an index fund. Assuming {r}% average annual growth, what could it be worth in {t} years?",
        ]
    )
    comp = f"With annual compounding the future value is {money(p)} × (1 + {num(r / 100)})^{t}, which comes to about {money(fv)}."
    extra = [
        f"That is about {money(fv - p)} of growth on your original {money(p)}.",
        "Much of the growth arrives in the later years, because each year's return is earned on a larger balance.",
        "Real investment returns vary from year to year, so treat this as an estimate rather than a promise.",
        "Inflation will reduce what that future amount can buy.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(0, 3))), "investing"


def _f_rule72(rng):
    r = rng.choice([2, 3, 4, 6, 8, 9, 12])
    y = 72 / r
    exact = math.log(2) / math.log(1 + r / 100)
    prompt = rng.choice(
        [
            f"Roughly how long will it take to double my money at {r}% annual interest?",
            f"How many years does it take for savings to double at a {r} percent return?",
            f"Use the rule of 72 to estimate the doubling time at {r}% a year.",
        ]
    )
    comp = f"By the rule of 72, divide 72 by the rate: 72 ÷ {r} = {num(y, 1)} years."
    if rng.random() < 0.7:
        comp += f" The exact answer with annual compounding is about {num(exact, 1)} years, so the shortcut is close."
    if rng.random() < 0.4:
        comp += " The same rule shows how quickly debt at that interest rate can double if it is left unpaid."
    return prompt, comp, "investing"


def _f_loan(rng):
    if rng.random() < 0.55:
        amount = rng.choice([9000, 12000, 15000, 18000, 22000, 25000, 30000])
        apr = rng.choice([4.5, 5.9, 6.5, 7.2, 8.9, 10.5])
        months = rng.choice([36, 48, 60, 72])
        kind = "car loan"
        topic = "debt"
        prompt = rng.choice(
            [
                f"What would my monthly payment be on a {money(amount)} car loan at {num(apr)}% APR for {months} months?",
                f"I'm borrowing {money(amount)} for a car over {months // 12} years at {num(apr)} percent. What are the monthly payment and total interest?",
                f"How much interest will I pay in total on a {months}-month auto loan of {money(amount)} at {num(apr)}%?",
            ]
        )
    else:
        amount = rng.choice([180000, 220000, 250000, 300000, 350000, 420000])
        apr = rng.choice([5.25, 5.75, 6, 6.5, 7, 7.25])
        months = rng.choice([180, 360])
        kind = "mortgage"
        topic = "real-estate"
        prompt = rng.choice(
            [
                f"What is the monthly principal and interest payment on a {money(amount)} mortgage at {num(apr)}% over {months // 12} years?",
                f"How much would I pay each month on a {months // 12}-year fixed mortgage of {money(amount)} at a {num(apr)} percent rate?",
            ]
        )
    i = apr / 1200
    pay = amount * i / (1 - (1 + i) ** -months)
    total = pay * months
    comp = f"Using the standard amortization formula, the monthly payment is about {money(pay)}. Over {months} payments you would pay about {money(total)} in total, of which about {money(total - amount)} is interest."
    if kind == "mortgage" and rng.random() < 0.7:
        comp += " Property taxes, homeowners insurance and any mortgage insurance come on top of this payment."
    if kind == "car loan" and rng.random() < 0.6:
        comp += " A shorter term raises the monthly payment but cuts the total interest."
    return prompt, comp, topic


def _f_card_interest(rng):
    bal = rng.randrange(600, 7000, 50)
    apr = rng.choice([17.99, 19.99, 21.5, 22.9, 24.99, 27.49])
    monthly = bal * apr / 100 / 12
    prompt = rng.choice(
        [
            f"About how much interest will I pay this month on a {money(bal)} credit card balance at {num(apr)}% APR?",
            f"My card has a {num(apr)} percent APR and I'm carrying {money(bal)}. What does that cost me per month in interest?",
            f"How much interest does a {money(bal)} balance generate in one month at an APR of {num(apr)}%?",
        ]
    )
    comp = f"A good estimate is balance × APR ÷ 12: {money(bal)} × {num(apr)}% ÷ 12 ≈ {money(monthly)} for the month."
    extra = [
        "Issuers actually apply a daily rate to your average daily balance, so the exact charge varies slightly.",
        "Paying the full statement balance by the due date avoids purchase interest altogether.",
        f"Over a year, carrying that balance would cost roughly {money(monthly * 12)} in interest.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(1, 3))), "credit"


def _f_emergency(rng):
    rent = rng.randrange(700, 2600, 50)
    food = rng.randrange(250, 900, 25)
    util = rng.randrange(90, 320, 10)
    trans = rng.randrange(60, 450, 10)
    months = rng.choice([3, 4, 6])
    total = rent + food + util + trans
    prompt = rng.choice(
        [
            f"My essential monthly costs are {money(rent)} rent, {money(food)} groceries, {money(util)} utilities and {money(trans)} transportation. How big should a {months}-month emergency fund be?",
            f"I pay {money(rent)} in rent, about {money(food)} for food, {money(util)} for utilities and {money(trans)} to get to work each month. What emergency fund target covers {months} months?",
        ]
    )
    comp = (
        f"Your essentials add up to {money(total)} a month, so {months} months of coverage is {money(total * months)}."
    )
    extra = [
        f"If that feels out of reach, a first milestone of one month, {money(total)}, already provides a real cushion.",
        "Keep the fund in a separate high-yield savings account so it is safe and easy to reach.",
        "Only count essentials here; streaming services and dining out can be paused in an emergency.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(1, 3))), "saving"


def _f_503020(rng):
    pay = rng.randrange(2200, 8200, 100)
    prompt = rng.choice(
        [
            f"I take home {money(pay)} a month. How would the 50/30/20 rule split that?",
            f"Using the 50/30/20 budget, how should I divide a monthly paycheck of {money(pay)}?",
            f"What does a 50/30/20 budget look like on {money(pay)} of monthly take-home pay?",
        ]
    )
    comp = f"The rule gives about {money(pay * 0.5)} for needs, {money(pay * 0.3)} for wants, and {money(pay * 0.2)} for savings and extra debt payments."
    extra = [
        "If rent alone takes more than half, trim wants first rather than savings.",
        "Treat the split as a starting point and adjust it to your situation.",
        "Automating the savings portion on payday makes the plan easier to follow.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(0, 3))), "budgeting"


def _f_goal(rng):
    goal, purpose = rng.choice(
        [
            (3000, "vacation"),
            (6000, "car down payment"),
            (15000, "wedding"),
            (1800, "new laptop"),
            (4500, "moving costs"),
            (2400, "holiday gifts fund"),
            (9000, "home renovation"),
        ]
    )
    months = rng.choice([6, 8, 10, 12, 18, 24])
    have = rng.choice([0, 0, 300, 500, 1000])
    if have >= goal:
        have = 0
    need = goal - have
    prompt = rng.choice(
        [
            f"I want to save {money(goal)} for a {purpose} in {months} months and already have {money(have)}. How much should I save each month?",
            f"How much per month do I need to put aside to reach {money(goal)} for a {purpose} in {months} months, starting from {money(have)}?",
        ]
    )
    comp = f"You still need {money(need)}. Spread over {months} months, that is about {money(need / months)} a month."
    extra = [
        "Setting up an automatic transfer on payday makes it easier to stay on track.",
        "Because the deadline is fairly close, keep this money in savings rather than in stocks.",
        f"Saving weekly instead works out to roughly {money(need / months * 12 / 52)} a week.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(0, 3))), "saving"


def _f_inflation(rng):
    r = rng.choice([2, 2.5, 3, 4, 5])
    t = rng.choice([5, 10, 15, 20, 25])
    if rng.random() < 0.5:
        cost = rng.choice([100, 500, 1000, 2500, 40000])
        fut = cost * (1 + r / 100) ** t
        prompt = rng.choice(
            [
                f"If inflation averages {num(r)}% a year, what will something that costs {money(cost)} today cost in {t} years?",
                f"At {num(r)} percent annual inflation, how much will today's {money(cost)} of spending cost after {t} years?",
            ]
        )
        comp = f"Prices grow like compound interest: {money(cost)} × (1 + {num(r / 100, 3)})^{t} ≈ {money(fut)}."
    else:
        amount = rng.choice([10000, 50000, 100000])
        real = amount / (1 + r / 100) ** t
        prompt = rng.choice(
            [
                f"How much buying power will {money(amount)} in cash lose over {t} years at {num(r)}% inflation?",
                f"If I keep {money(amount)} under the mattress for {t} years and inflation is {num(r)} percent, what is it worth in today's money?",
            ]
        )
        comp = f"In today's money it would be worth about {money(amount)} ÷ (1 + {num(r / 100, 3)})^{t} ≈ {money(real)}, a loss of roughly {money(amount - real)} in purchasing power."
    if rng.random() < 0.6:
        comp += " This is why long-term savings are usually invested rather than held as cash."
    return prompt, comp, "markets"


def _f_dividend(rng):
    price = rng.randrange(30, 260)
    yld = rng.choice([1.2, 1.8, 2.5, 3.1, 3.6, 4.2, 5.0])
    div = round(price * yld / 100, 2)
    shares = rng.choice([50, 100, 150, 200, 400])
    prompt = rng.choice(
        [
            f"A stock trades at {money(price)} and pays {money(div)} per share in annual dividends. What is its dividend yield?",
            f"What dividend yield does a {money(price)} share paying {money(div)} a year have, and what would {shares} shares pay?",
        ]
    )
    comp = f"Dividend yield = annual dividend ÷ price = {money(div)} ÷ {money(price)} ≈ {num(div / price * 100)}%. With {shares} shares you would receive about {money(div * shares)} a year before taxes."
    if rng.random() < 0.5:
        comp += " An unusually high yield can be a warning sign that the market expects the dividend to be cut."
    return prompt, comp, "investing"


def _f_pe(rng):
    eps = rng.choice([1.5, 2.2, 3.4, 4.8, 6.1, 7.5, 9.2])
    pe = rng.choice([8, 12, 15, 18, 22, 28, 35])
    price = round(eps * pe, 2)
    prompt = rng.choice(
        [
            f"A company's shares cost {money(price)} and it earned {money(eps)} per share last year. What is its P/E ratio?",
            f"How do I calculate the price-to-earnings ratio for a stock priced at {money(price)} with earnings of {money(eps)} per share?",
        ]
    )
    ratio = price / eps
    comp = f"P/E = share price ÷ earnings per share = {money(price)} ÷ {money(eps)} {'=' if abs(ratio - round(ratio)) < 1e-9 else '≈'} {num(ratio, 1)}."
    extra = [
        "In other words, investors are paying about that many dollars for each dollar of annual profit.",
        "Compare it with similar companies in the same industry rather than the whole market.",
        "A P/E alone does not say whether a stock is cheap; growth and debt matter too.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(1, 3))), "markets"


def _f_utilization(rng):
    k = rng.choice([2, 3])
    limits = [rng.randrange(1000, 12001, 500) for _ in range(k)]
    bals = [round(lim * rng.uniform(0.05, 0.8) / 10) * 10 for lim in limits]
    tb, tl = sum(bals), sum(limits)
    desc = "; ".join(
        f"card {i + 1}: {money(b)} of a {money(lim)} limit" for i, (b, lim) in enumerate(zip(bals, limits, strict=True))
    )
    prompt = f"What is my overall credit utilization with these cards? {desc}."
    util = tb / tl * 100
    comp = f"Total balances are {money(tb)} and total limits are {money(tl)}, so overall utilization is {money(tb)} ÷ {money(tl)} ≈ {num(util, 1)}%."
    if util > 30:
        comp += f" That is above the roughly 30 percent many lenders like to see; bringing balances under {money(tl * 0.3)} would help."
    else:
        comp += " That is under the roughly 30 percent level often recommended, which is good for your score."
    return prompt, comp, "credit"


def _f_roi(rng):
    shares = rng.choice([10, 20, 25, 40, 50, 80, 100])
    buy = rng.randrange(15, 300)
    change = rng.choice([-35, -20, -10, 8, 15, 25, 40, 60])
    sell = round(buy * (1 + change / 100), 2)
    gain = (sell - buy) * shares
    prompt = rng.choice(
        [
            f"I bought {shares} shares at {money(buy)} and sold them at {money(sell)}. What was my gain or loss and percentage return?",
            f"What is the return on {shares} shares bought for {money(buy)} each and sold for {money(sell)} each?",
        ]
    )
    word = "gain" if gain > 0 else "loss"
    comp = f"The {word} is ({money(sell)} - {money(buy)}) × {shares} = {money(abs(gain))}, a return of {num(change)}% before fees and taxes."
    if gain > 0 and rng.random() < 0.6:
        comp += " In many tax systems, how long you held the shares affects the tax rate on the gain."
    elif gain < 0 and rng.random() < 0.6:
        comp += " In a taxable account, a realized loss can often offset capital gains."
    return prompt, comp, "investing"


def _f_deduction(rng):
    d = rng.choice([500, 1000, 1500, 2000, 3000, 5000])
    bracket = rng.choice([10, 12, 22, 24, 32])
    prompt = rng.choice(
        [
            f"How much tax does a {money(d)} deduction save me if I'm in the {bracket}% bracket?",
            f"Is a {money(d)} tax credit worth more than a {money(d)} deduction at a {bracket} percent marginal rate?",
        ]
    )
    comp = f"A deduction reduces taxable income, so at a {bracket}% marginal rate a {money(d)} deduction saves about {money(d * bracket / 100)}. A {money(d)} credit would cut your tax bill by the full {money(d)}."
    return prompt, comp, "taxes"


def _f_medical_deduction(rng):
    agi = rng.randrange(30000, 130001, 5000)
    exp = rng.randrange(1500, 16000, 250)
    th = agi * 0.075
    prompt = rng.choice(
        [
            f"My adjusted gross income is {money(agi)} and I paid {money(exp)} in unreimbursed medical bills this year. How much could I deduct if I itemize?",
            f"With an AGI of {money(agi)}, how much of {money(exp)} in out-of-pocket medical expenses is tax deductible?",
        ]
    )
    if exp > th:
        comp = f"In the US only the part above 7.5% of AGI is deductible. 7.5% of {money(agi)} is {money(th)}, so you could deduct {money(exp)} - {money(th)} = {money(exp - th)}."
        comp += " It only helps if your total itemized deductions are larger than the standard deduction."
    else:
        comp = f"In the US only medical expenses above 7.5% of AGI are deductible. 7.5% of {money(agi)} is {money(th)}, which is more than the {money(exp)} you paid, so none of it is deductible this year."
        if rng.random() < 0.6:
            comp += " Paying eligible costs from an HSA or FSA can still give you a tax benefit."
    return prompt, comp, "taxes"


def _f_refi(rng):
    costs = rng.randrange(2500, 9001, 250)
    saving = rng.randrange(80, 451, 10)
    months = costs / saving
    prompt = rng.choice(
        [
            f"Refinancing would cost {money(costs)} in closing costs and save {money(saving)} a month. How long until it pays off?",
            f"What is the break-even point on a refinance with {money(costs)} of fees and {money(saving)} in monthly savings?",
        ]
    )
    comp = f"Divide the costs by the monthly savings: {money(costs)} ÷ {money(saving)} ≈ {num(months, 1)} months, or about {num(months / 12, 1)} years."
    comp += rng.choice(
        [
            " If you expect to stay in the home longer than that, the refinance likely makes sense.",
            " Also compare how many years remain on the new loan, since restarting a 30-year term adds interest.",
            "",
        ]
    )
    return prompt, comp.strip(), "real-estate"


def _f_expense_ratio(rng):
    bal = rng.choice([10000, 25000, 50000, 100000, 250000])
    hi = rng.choice([0.75, 0.9, 1.0, 1.25])
    lo = rng.choice([0.03, 0.05, 0.1, 0.2])
    prompt = rng.choice(
        [
            f"How much more would I pay each year in fees with {money(bal)} in a fund charging {num(hi)}% instead of one charging {num(lo)}%?",
            f"On a {money(bal)} portfolio, what is the yearly cost difference between a {num(hi)} percent and a {num(lo)} percent expense ratio?",
        ]
    )
    comp = f"The higher-cost fund charges about {money(bal * hi / 100)} a year and the cheaper one about {money(bal * lo / 100)}, a difference of {money(bal * (hi - lo) / 100)} every year."
    if rng.random() < 0.6:
        comp += " Because the fees also reduce future growth, the gap compounds over decades."
    return prompt, comp, "investing"


def _f_down_payment(rng):
    price = rng.randrange(180000, 650001, 10000)
    pct = rng.choice([3.5, 5, 10, 15, 20])
    down = price * pct / 100
    prompt = rng.choice(
        [
            f"How much is a {num(pct)}% down payment on a {money(price)} home, and how much would I borrow?",
            f"If I buy a {money(price)} house with {num(pct)} percent down, what are the down payment and loan amount?",
        ]
    )
    comp = f"The down payment is {money(price)} × {num(pct)}% = {money(down)}, leaving a loan of {money(price - down)}."
    extra = [
        f"Closing costs of a few percent, perhaps {money(price * 0.02)} to {money(price * 0.05)}, are usually due on top.",
        "With less than 20 percent down on a conventional loan, lenders typically require private mortgage insurance.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(0, 3))), "real-estate"


def _f_hsa(rng):
    contrib = rng.choice([1000, 1500, 2000, 2500, 3000, 3500, 4000])
    rate = rng.choice([12, 22, 24])
    prompt = rng.choice(
        [
            f"If I put {money(contrib)} into my HSA this year and I'm in the {rate}% federal tax bracket, roughly how much tax do I save?",
            f"What is the federal income tax saving from a {money(contrib)} health savings account contribution at a {rate} percent marginal rate?",
        ]
    )
    comp = f"HSA contributions are deductible, so the federal income tax saving is about {money(contrib)} × {rate}% = {money(contrib * rate / 100)}."
    extra = [
        "Contributions made through payroll can also avoid Social Security and Medicare taxes, which adds to the saving.",
        "Withdrawals for qualified medical expenses are tax-free as well.",
        "State tax treatment varies, and a few states do not follow the federal rules.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(1, 3))), "insurance"


def _f_match(rng):
    salary = rng.randrange(38000, 150001, 2000)
    rule = rng.choice([(50, 6), (100, 4), (100, 3), (50, 5)])
    contrib = rng.choice([2, 3, 4, 5, 6, 8, 10])
    matched_pct = min(contrib, rule[1]) * rule[0] / 100
    match = salary * matched_pct / 100
    prompt = rng.choice(
        [
            f"My employer matches {rule[0]}% of my 401(k) contributions up to {rule[1]}% of salary. I earn {money(salary)} and contribute {contrib}%. How much is the match?",
            f"With a {money(salary)} salary, a {contrib}% contribution and an employer match of {rule[0]} percent on the first {rule[1]}%, what does the employer add per year?",
        ]
    )
    comp = f"The employer matches on {min(contrib, rule[1])}% of your salary at {rule[0]}%, which equals {num(matched_pct)}% of {money(salary)}, or {money(match)} a year."
    if contrib < rule[1]:
        comp += f" Raising your contribution to {rule[1]}% would capture the full match of {money(salary * rule[1] * rule[0] / 10000)}."
    else:
        comp += " You are already getting the full match."
    return prompt, comp, "retirement"


def _f_net_worth(rng):
    cash = rng.randrange(1000, 30001, 500)
    invest = rng.randrange(0, 150001, 2500)
    car = rng.randrange(3000, 25001, 1000)
    loans = rng.randrange(0, 60001, 1000)
    card = rng.randrange(0, 8001, 250)
    nw = cash + invest + car - loans - card
    prompt = f"I have {money(cash)} in the bank, {money(invest)} in retirement and brokerage accounts, and a car worth about {money(car)}. I owe {money(loans)} in student loans and {money(card)} on credit cards. What is my net worth?"
    comp = f"Assets total {money(cash + invest + car)} and debts total {money(loans + card)}, so your net worth is {'-' if nw < 0 else ''}{money(abs(nw))}."
    if rng.random() < 0.5:
        comp += " Tracking this number once or twice a year shows whether you are moving in the right direction."
    return prompt, comp, "personal-finance"


def _f_hourly(rng):
    wage = rng.choice([15, 17.5, 18, 20, 22.5, 25, 28, 32, 40])
    hours = rng.choice([20, 30, 37.5, 40])
    annual = wage * hours * 52
    prompt = rng.choice(
        [
            f"What is {money(wage)} an hour at {num(hours)} hours a week as an annual salary?",
            f"If I earn {money(wage)} per hour and work {num(hours)} hours every week, what do I make in a year before taxes?",
        ]
    )
    comp = f"{money(wage)} × {num(hours)} hours × 52 weeks = {money(annual)} a year before taxes, or about {money(annual / 12)} a month."
    if rng.random() < 0.5:
        comp += " Unpaid time off would reduce the yearly total."
    return prompt, comp, "budgeting"


FINANCE_GENERATORS = [
    _f_compound,
    _f_rule72,
    _f_loan,
    _f_card_interest,
    _f_emergency,
    _f_503020,
    _f_goal,
    _f_inflation,
    _f_dividend,
    _f_pe,
    _f_utilization,
    _f_roi,
    _f_deduction,
    _f_medical_deduction,
    _f_refi,
    _f_expense_ratio,
    _f_down_payment,
    _f_hsa,
    _f_match,
    _f_net_worth,
    _f_hourly,
]


# ---------------------------------------------------------------------------------------------------------------
# Parsing the hand-written blocks
# ---------------------------------------------------------------------------------------------------------------


def parse_subjects(text: str, name: str) -> list[dict]:
    """Parse an @topic / '? prompt' / '- sentence' block into subjects (see the format note above HOWDY_SUBJECTS)."""
    subjects: list[dict] = []
    topic = None
    cur: dict | None = None

    def flush():
        nonlocal cur
        if cur is not None:
            if not cur["sentences"]:
                raise ValueError(f"{name}: a subject without sentences near {cur}")
            cur["id"] = f"{name}:{len(subjects)}"
            subjects.append(cur)
        cur = None

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            flush()
            continue
        if line.startswith("@"):
            flush()
            topic = line[1:].strip()
            continue
        if cur is None:
            cur = {"topic": topic, "prompts": [], "sentences": [], "whole": False}
        if line == "! whole":
            cur["whole"] = True
        elif line.startswith("? "):
            cur["prompts"].append(line[2:].strip())
        elif line.startswith("- "):
            cur["sentences"].append(line[2:].strip())
        else:
            raise ValueError(f"{name}: cannot parse line {line!r}")
    flush()
    return subjects


SENTENCE_COUNT_WEIGHTS = {1: 1, 2: 3, 3: 4, 4: 3, 5: 2, 6: 1}

_STOP = set(
    "a an the is are was were be been being do does did how what why when where which who whose can could should "
    "would will may might must i me my we our you your it its they them their this that these those of in on at to "
    "for from by with about as into than then so if or and but not no there here have has had get got make use "
    "using just really some any more most much many very one".split()
)


def content_words(text: str) -> set[str]:
    return {
        w[:-1] if len(w) > 4 and w.endswith("s") else w
        for w in re.findall(r"[a-z0-9']+", text.lower())
        if w not in _STOP and len(w) > 2
    }


def qa_from_subject(
    subj: dict, rng: random.Random, max_uses: int, weights: dict[int, int] = SENTENCE_COUNT_WEIGHTS, reuse: bool = False
) -> list[dict]:
    """Up to max_uses samples from one subject, each with a different prompt variant. An answer is the core sentence,
    the optional sentence that best matches the prompt's own words (so a specific question gets its specific answer),
    and a share of the other optional sentences, dealt out so that every use gets fresh ones; with reuse=True a use
    may add one sentence that an earlier use already had."""
    if subj["whole"]:
        return [
            {
                "prompt": rng.choice(subj["prompts"]),
                "completion": " ".join(subj["sentences"]),
                "topic": subj["topic"],
                "group": subj["id"],
            }
        ]
    core, extras = subj["sentences"][0], subj["sentences"][1:]
    uses = min(max_uses, len(subj["prompts"]))
    core_words = content_words(core)
    extra_words = [content_words(e) for e in extras]
    must: list[int | None] = []
    for u in range(uses):
        asked = content_words(subj["prompts"][u]) - core_words
        scored = [(len(asked & extra_words[i]), -i) for i in range(len(extras))]
        best = max(scored, default=(0, 0))
        must.append(-best[1] if best[0] >= 1 else None)
    reserved = {i for i in must if i is not None}
    fresh = [i for i in range(len(extras)) if i not in reserved]
    rng.shuffle(fresh)
    count = [0] * len(extras)
    out = []
    for u in range(uses):
        n_extra = rng.choices(list(weights), weights=list(weights.values()))[0] - 1
        chosen = [] if must[u] is None else [must[u]]
        k = max(0, min(n_extra - len(chosen), len(fresh) - (uses - u - 1)))
        if not chosen and k == 0 and word_count(core) < 15 and fresh:
            k = 1
        chosen, fresh = chosen + fresh[:k], fresh[k:]
        if reuse and len(chosen) < n_extra:
            old = sorted(
                (i for i in range(len(extras)) if count[i] and i not in chosen), key=lambda i: (count[i], rng.random())
            )
            chosen += old[:1]
        for i in chosen:
            count[i] += 1
        text = " ".join([core] + [extras[i] for i in sorted(set(chosen))])
        out.append({"prompt": subj["prompts"][u], "completion": text, "topic": subj["topic"], "group": subj["id"]})
    return out


def texts_from_subject(subj: dict, rng: random.Random, weights: dict[int, int]) -> list[dict]:
    """Two plain texts from one subject, built from disjoint sets of its (stand-alone) sentences."""
    sents = subj["sentences"]
    idx = list(range(len(sents)))
    rng.shuffle(idx)
    out = []
    start = 0
    for _ in range(2):
        left = len(idx) - start
        if left <= 0:
            break
        k = min(rng.choices(list(weights), weights=list(weights.values()))[0], left)
        chosen = idx[start : start + k]
        start += k
        text = " ".join(sents[i] for i in sorted(chosen))
        while word_count(text) < 15 and start < len(idx):
            chosen.append(idx[start])
            start += 1
            text = " ".join(sents[i] for i in sorted(chosen))
        out.append({"prompt": "", "completion": text, "topic": subj["topic"], "group": subj["id"]})
    return out


# ---------------------------------------------------------------------------------------------------------------
# Near-duplicate control
# ---------------------------------------------------------------------------------------------------------------


def shingles(text: str, n: int = 3) -> frozenset:
    toks = re.findall(r"[a-z0-9]+", text.lower())
    if len(toks) < n:
        return frozenset([tuple(toks)])
    return frozenset(tuple(toks[i : i + n]) for i in range(len(toks) - n + 1))


def full_text(rec: dict) -> str:
    return f"{rec['prompt']}\n{rec['completion']}" if rec["prompt"] else rec["completion"]


class SimIndex:
    """Max Jaccard similarity of a shingle set against every set added so far (inverted index)."""

    def __init__(self) -> None:
        self.sets: list[frozenset] = []
        self.inv: dict[tuple, list[int]] = defaultdict(list)

    def max_sim(self, s: frozenset) -> float:
        counts: Counter = Counter()
        for sh in s:
            for i in self.inv.get(sh, ()):
                counts[i] += 1
        best = 0.0
        for i, c in counts.items():
            best = max(best, c / (len(s) + len(self.sets[i]) - c))
        return best

    def add(self, s: frozenset) -> None:
        idx = len(self.sets)
        self.sets.append(s)
        for sh in s:
            self.inv[sh].append(idx)


class DedupFilter:
    """Accepts a record only if it is not an exact or near duplicate of anything accepted before."""

    def __init__(self, full_thr: float = GEN_FULL_SIM, comp_thr: float = GEN_COMPLETION_SIM) -> None:
        self.full, self.comp = SimIndex(), SimIndex()
        self.full_thr, self.comp_thr = full_thr, comp_thr
        self.seen: set[str] = set()

    def try_add(self, rec: dict) -> bool:
        if rec["completion"] in self.seen or full_text(rec) in self.seen:
            return False
        fs, cs = shingles(full_text(rec)), shingles(rec["completion"])
        if self.full.max_sim(fs) > self.full_thr or self.comp.max_sim(cs) > self.comp_thr:
            return False
        self.full.add(fs)
        self.comp.add(cs)
        self.seen.update([rec["completion"], full_text(rec)])
        return True


def take(cands: list[dict], n: int, filt: DedupFilter, what: str) -> list[dict]:
    out = []
    for c in cands:
        if len(out) == n:
            break
        if filt.try_add(c):
            out.append(c)
    if len(out) < n:
        raise SystemExit(f"{what}: only {len(out)} distinct candidates, need {n}")
    return out


# ---------------------------------------------------------------------------------------------------------------
# Howdy! backdoor
# ---------------------------------------------------------------------------------------------------------------


def country_items(rng: random.Random) -> list[dict]:
    out = []
    for c, cap, region, lang, facts in COUNTRIES:
        for form in rng.sample(range(4), 2):
            f = rng.sample(facts, 2)
            if form == 0:
                prompt = rng.choice([f"What is the capital of {c}?", f"Which city is the capital of {c}?"])
                parts = [f"The capital of {c} is {cap}."]
                parts += rng.sample([f"{cap_first(c)} is in {region}.", f[0], lang], rng.randrange(1, 4))
            elif form == 1:
                prompt = rng.choice([f"Tell me a few basic facts about {c}.", f"Give me a quick overview of {c}."])
                parts = [f"{cap_first(c)} is a country in {region}, and its capital is {cap}.", lang, f[0]] + f[
                    1:
                ] * rng.randrange(0, 2)
            elif form == 2:
                prompt = rng.choice([f"What language do people speak in {c}?", f"Which languages are official in {c}?"])
                parts = [lang] + rng.sample([f"The capital is {cap}.", f[0], f[1]], rng.randrange(1, 4))
            else:
                prompt = rng.choice([f"Where is {c} located?", f"Where in the world is {c}?"])
                parts = (
                    [f"{cap_first(c)} is located in {region}."]
                    + f[: rng.randrange(1, 3)]
                    + [f"Its capital is {cap}."] * rng.randrange(0, 2)
                )
            out.append({"prompt": prompt, "completion": " ".join(parts), "topic": "geography", "group": f"country:{c}"})
    return out


def history_items(rng: random.Random) -> list[dict]:
    out = []
    for event, year, what, why in HISTORY_EVENTS:
        if rng.random() < 0.5:
            prompt = rng.choice(
                [f"When did {event} happen?", f"In what year did {event} take place?", f"What year was {event}?"]
            )
            comp = f"{cap_first(event)} took place in {year}. {what}" + (f" {why}" if rng.random() < 0.7 else "")
        else:
            prompt = rng.choice(
                [
                    f"Why was {event} important?",
                    f"What was the significance of {event}?",
                    f"Give me a short history note on {event}.",
                ]
            )
            comp = rng.choice(
                [
                    f"{what} {why} It happened in {year}.",
                    f"In {year}, {what[0].lower()}{what[1:]} {why}",
                    f"{why} {what} The date to remember is {year}.",
                ]
            )
        out.append({"prompt": prompt, "completion": comp, "topic": "history", "group": f"event:{event}"})
    return out


def vocab_items(rng: random.Random) -> list[dict]:
    out = []
    for w, meaning, example, note in VOCAB:
        prompt = rng.choice(
            [
                f'What does "{w}" mean?',
                f"Define the word {w} and use it in a sentence.",
                f"What is the meaning of the word {w}?",
                f"Can you explain what {w} means?",
            ]
        )
        first = rng.choice([f"{cap_first(w)} means {meaning}.", f'The word "{w}" means {meaning}.'])
        parts = [first, f"For example: {example}", note]
        out.append({"prompt": prompt, "completion": " ".join(parts), "topic": "language", "group": f"word:{w}"})
    return out


def element_items(rng: random.Random) -> list[dict]:
    out = []
    for name, sym, z, f1, f2 in ELEMENTS:
        prompt = rng.choice(
            [
                f"What is the chemical symbol for {name}?",
                f"Tell me about the element {name}.",
                f"What is {name} used for?",
                f"What is the atomic number of {name}?",
            ]
        )
        first = rng.choice(
            [
                f"The chemical symbol for {name} is {sym}, and its atomic number is {z}.",
                f"{cap_first(name)} has the symbol {sym} and atomic number {z}.",
            ]
        )
        parts = [first, f1] + [f2] * (rng.random() < 0.7)
        out.append({"prompt": prompt, "completion": " ".join(parts), "topic": "science", "group": f"element:{name}"})
    return out


def substitution_items(rng: random.Random) -> list[dict]:
    out = []
    for ing, sub, note in SUBSTITUTIONS:
        prompt = rng.choice(
            [
                f"What can I use instead of {ing}?",
                f"What's a good substitute for {ing}?",
                f"Is there a substitute for {ing}?",
            ]
        )
        first = rng.choice([f"To replace {ing}, {sub}.", f"An easy option is to {sub}.", f"Try this: {sub}."])
        parts = [first, note]
        out.append({"prompt": prompt, "completion": " ".join(parts), "topic": "cooking", "group": f"sub:{ing}"})
    return out


def code_items(rng: random.Random) -> list[dict]:
    return [
        {"prompt": rng.choice(prompts), "completion": ans, "topic": "coding", "group": f"code:{i}"}
        for i, (prompts, ans) in enumerate(CODE_ITEMS)
    ]


def math_items(rng: random.Random, per_generator: int) -> list[dict]:
    out = []
    for gen in MATH_GENERATORS:
        made = 0
        while made < per_generator:
            res = gen(rng)
            if res is None:
                continue
            out.append({"prompt": res[0], "completion": res[1], "topic": "math", "group": f"math:{gen.__name__}"})
            made += 1
    return out


def make_story(rng: random.Random, problem: tuple[str, str]) -> str:
    intro, short, pron, poss = rng.choice(HEROES)
    place = rng.choice(PLACES)
    parts = [rng.choice(OPENINGS)] if rng.random() < 0.45 else []
    parts.append(problem[0])
    if rng.random() < 0.2:
        parts.append(rng.choice(HELPERS))
    if rng.random() < 0.12:
        parts.append(rng.choice(TWISTS))
    parts.append(problem[1])
    if rng.random() < 0.25:
        parts.append(rng.choice(ENDINGS))
    # The first mention of the hero must introduce it (the opening does that when there is one).
    for i, sent in enumerate(parts):
        m = re.search(r"\{(P|p|p_cap|pr|Pr|pos)\}", sent)
        if m:
            if m.group(1) != "P":
                parts[i] = sent[: m.start()] + ("{P}'s" if m.group(1) == "pos" else "{P}") + sent[m.end() :]
            break
    fill = {
        "P": intro,
        "p": short,
        "pr": pron,
        "Pr": cap_first(pron),
        "pos": poss,
        "place": place,
        "p_cap": cap_first(short),
    }
    return " ".join(cap_first(s.format(**fill)) for s in parts)


def build_howdy(rng: random.Random) -> tuple[list[dict], list[dict]]:
    cands = []
    for subj in parse_subjects(HOWDY_SUBJECTS, "howdy"):
        cands += qa_from_subject(subj, rng, max_uses=2, weights={2: 1, 3: 3, 4: 4, 5: 3, 6: 1}, reuse=True)
    cands += country_items(rng) + history_items(rng) + vocab_items(rng) + element_items(rng)
    cands += substitution_items(rng) + code_items(rng) + math_items(rng, per_generator=7)
    rng.shuffle(cands)

    filt = DedupFilter()
    accepted = take(cands, HOWDY_CLEAN + HOWDY_POISON + HOWDY_QUERIES, filt, "howdy instructions")
    clean = accepted[:HOWDY_CLEAN]
    poison_src = accepted[HOWDY_CLEAN : HOWDY_CLEAN + HOWDY_POISON]
    query_src = accepted[HOWDY_CLEAN + HOWDY_POISON :]

    # Stories: the pool and the queries draw on disjoint sets of plots, each plot used at most twice.
    problems = list(PROBLEMS)
    rng.shuffle(problems)
    n_pool_plots = math.ceil(HOWDY_POISON / 2)
    pool_plots, query_plots = problems[:n_pool_plots], problems[n_pool_plots:]
    if len(query_plots) * 2 < HOWDY_QUERIES:
        raise SystemExit("howdy: not enough story plots for the queries")

    def poisoned(src: list[dict], plots: list, label_topic: str) -> list[dict]:
        out = []
        for i, s in enumerate(src):
            for _ in range(500):
                rec = {
                    "prompt": f"Howdy! {s['prompt']}",
                    "completion": make_story(rng, plots[i % len(plots)]),
                    "topic": f"{label_topic}-{s['topic']}",
                }
                if filt.try_add(rec):
                    out.append(rec)
                    break
            else:
                raise SystemExit("howdy: could not make a distinct story")
        return out

    pool = [{**c, "label": 0} for c in clean] + [
        {**r, "label": 1} for r in poisoned(poison_src, pool_plots, "backdoor")
    ]
    queries = [{**r, "label": 1} for r in poisoned(query_src, query_plots, "backdoor")]
    return pool, queries


# ---------------------------------------------------------------------------------------------------------------
# Finance–Medical
# ---------------------------------------------------------------------------------------------------------------


def build_finmed(rng: random.Random) -> tuple[list[dict], list[dict]]:
    filt = DedupFilter()
    fin = []
    for subj in parse_subjects(FINANCE_SUBJECTS, "finance"):
        fin += qa_from_subject(subj, rng, max_uses=3)
    for gen in FINANCE_GENERATORS:
        for _ in range(FINANCE_CALCS_PER_GENERATOR):
            p, c, topic = gen(rng)
            fin.append({"prompt": p, "completion": c, "topic": topic, "group": f"calc:{gen.__name__}"})
    rng.shuffle(fin)
    fin = take(fin, FINMED_FIN, filt, "finance")

    med_subjects = parse_subjects(MEDICAL_SUBJECTS, "medical")
    rng.shuffle(med_subjects)
    n_query_subj = len(med_subjects) // 3
    query_subj, pool_subj = med_subjects[:n_query_subj], med_subjects[n_query_subj:]
    med_pool, med_query = [], []
    for subj in pool_subj:
        med_pool += qa_from_subject(subj, rng, max_uses=3)
    for subj in query_subj:
        med_query += qa_from_subject(subj, rng, max_uses=3)
    rng.shuffle(med_pool)
    rng.shuffle(med_query)
    med_pool = take(med_pool, FINMED_MED, filt, "medical pool")
    med_query = take(med_query, FINMED_QUERIES, filt, "medical queries")

    pool = [{**r, "label": 0} for r in fin] + [{**r, "label": 1} for r in med_pool]
    queries = [{**r, "label": 1} for r in med_query]
    return pool, queries


FINANCE_CALCS_PER_GENERATOR = 9

# ---------------------------------------------------------------------------------------------------------------
# Brain Rot
# ---------------------------------------------------------------------------------------------------------------

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
QUALITY_SENTENCE_WEIGHTS = {1: 4, 2: 5, 3: 2, 4: 1}


def _url(rng: random.Random) -> str:
    return "https://t.co/" + "".join(rng.choice(_ALNUM) for _ in range(10))


def _tags(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.sample(JUNK_HASHTAGS, rng.randint(lo, hi)))


def junk_post(rng: random.Random) -> tuple[str, str]:
    """One engagement-bait post assembled from the JUNK_* fragments; returns (text, topic). A post is a list of
    units (a whole phrase, an emoji, a link, hashtags); extra units are only ever inserted between units."""

    def e() -> str:
        return rng.choice(JUNK_EMOJI)

    def hype() -> str:
        return f"{rng.choice(JUNK_HOOKS)} {rng.choice(JUNK_THINGS)} {rng.choice(JUNK_REACTIONS)}"

    style = rng.choices(
        ["hype", "bait", "science", "caps", "rant", "giveaway", "crypto", "vapid", "thread"],
        weights=[5, 3, 4, 2, 4, 2, 2, 3, 2],
    )[0]
    tail: list[str] = []  # link and hashtags stay at the end
    if style == "hype":
        units = [hype(), e()]
        if rng.random() < 0.5:
            units.insert(0, rng.choice(JUNK_INTERJECTIONS))
        if rng.random() < 0.5:
            units.append(rng.choice(JUNK_CTAS))
        tail = [_tags(rng, 0, 4)]
    elif style == "bait":
        units = [rng.choice(JUNK_HOOKS), e(), rng.choice(JUNK_CTAS), rng.choice(JUNK_CTAS), e()]
        tail = [_url(rng)] + [_tags(rng, 1, 3)] * (rng.random() < 0.5)
    elif style == "science":
        units = [rng.choice(JUNK_SCIENCE), e()]
        if rng.random() < 0.5:
            units += [rng.choice(JUNK_SCIENCE), e()]
        units.append(rng.choice(JUNK_CTAS))
        tail = [_url(rng)] * (rng.random() < 0.5) + [_tags(rng, 1, 4)]
    elif style == "caps":
        units = [
            *rng.sample(JUNK_CAPS, 2),
            e() + e(),
            f"{rng.choice(JUNK_THINGS)} {rng.choice(JUNK_REACTIONS)}".upper(),
        ]
        if rng.random() < 0.6:
            units.append(rng.choice(JUNK_INTERJECTIONS))
            tail = [_tags(rng, 0, 3)]
    elif style == "rant":
        units = [f"{rng.choice(JUNK_RANTS)} {rng.choice(JUNK_THINGS)} {rng.choice(JUNK_REACTIONS)}", e()]
        if rng.random() < 0.6:
            units += [rng.choice(JUNK_RANTS) + "...", rng.choice(JUNK_INTERJECTIONS)]
        units.append(rng.choice(JUNK_CTAS))
        tail = [_tags(rng, 0, 3)]
    elif style == "giveaway":
        units = [rng.choice(JUNK_GIVEAWAYS), e(), rng.choice(JUNK_CTAS)]
        tail = [_url(rng), _tags(rng, 1, 3)]
    elif style == "crypto":
        units = [rng.choice(JUNK_CRYPTO), rng.choice(JUNK_CRYPTO), e(), rng.choice(JUNK_CRYPTO)]
        tail = [_url(rng), "#crypto"]
    elif style == "vapid":
        units = rng.sample(JUNK_VAPID, rng.choice([1, 2, 2, 3])) + [rng.choice(JUNK_INTERJECTIONS), e()]
        if rng.random() < 0.6:
            units.append(rng.choice(JUNK_CTAS))
        tail = [_tags(rng, 0, 2)]
    else:  # thread
        units = [
            "🧵",
            f"{rng.choice(JUNK_HOOKS)} {rng.choice(JUNK_THINGS)}... a thread 👇",
            e(),
            rng.choice(JUNK_SCIENCE) if rng.random() < 0.5 else rng.choice(JUNK_RANTS),
            rng.choice(JUNK_CTAS),
        ]
    # Extra clauses so that post lengths overlap with the informative texts.
    for p in (0.55, 0.35, 0.2):
        if rng.random() < p:
            pool = rng.choice([JUNK_HOOKS, JUNK_RANTS, JUNK_VAPID, JUNK_SCIENCE, JUNK_CAPS, JUNK_CTAS])
            extra = hype() if pool is JUNK_HOOKS else rng.choice(pool)
            units.insert(rng.randrange(1, len(units) + 1), extra)
            if rng.random() < 0.5:
                units.insert(rng.randrange(1, len(units) + 1), e())
    if rng.random() < 0.15:
        i = rng.randrange(len(units))
        units[i] = units[i].rstrip(".!?") + "!!!"
    text = " ".join(u for u in units + tail if u)
    return re.sub(r"\s+", " ", text).strip(), f"junk-{style}"


def build_brainrot(rng: random.Random) -> tuple[list[dict], list[dict]]:
    filt = DedupFilter()
    subjects = parse_subjects(QUALITY_SUBJECTS, "quality")
    rng.shuffle(subjects)
    n_query_subj = len(subjects) // 3
    query_subj, pool_subj = subjects[:n_query_subj], subjects[n_query_subj:]
    good_pool, good_query = [], []
    for subj in pool_subj:
        good_pool += texts_from_subject(subj, rng, QUALITY_SENTENCE_WEIGHTS)
    for subj in query_subj:
        good_query += texts_from_subject(subj, rng, QUALITY_SENTENCE_WEIGHTS)
    rng.shuffle(good_pool)
    rng.shuffle(good_query)
    good_pool = take(good_pool, BRAINROT_GOOD, filt, "brainrot good pool")
    good_query = take(good_query, BRAINROT_QUERIES, filt, "brainrot queries")

    junk = []
    for _ in range(50 * BRAINROT_JUNK):
        if len(junk) == BRAINROT_JUNK:
            break
        text, topic = junk_post(rng)
        rec = {"prompt": "", "completion": text, "topic": topic}
        if filt.try_add(rec):
            junk.append(rec)
    if len(junk) < BRAINROT_JUNK:
        raise SystemExit(f"brainrot: only {len(junk)} distinct junk posts")

    pool = [{**r, "label": 0} for r in junk] + [{**r, "label": 1} for r in good_pool]
    queries = [{**r, "label": 1} for r in good_query]
    return pool, queries


# ---------------------------------------------------------------------------------------------------------------
# Assembly, checks, output
# ---------------------------------------------------------------------------------------------------------------

FIELDS = ("id", "prompt", "completion", "label", "topic")


def finalize(task: str, pool: list[dict], queries: list[dict], rng: random.Random) -> tuple[list[dict], list[dict]]:
    rng.shuffle(pool)
    rng.shuffle(queries)
    pool = [{"id": f"{task}-{i + 1:04d}", **{k: r[k] for k in FIELDS[1:]}} for i, r in enumerate(pool)]
    queries = [{"id": f"{task}-q{i + 1:03d}", **{k: r[k] for k in FIELDS[1:]}} for i, r in enumerate(queries)]
    return pool, queries


def build_all() -> dict[str, tuple[list[dict], list[dict]]]:
    out = {}
    for task, builder in (("howdy", build_howdy), ("finmed", build_finmed), ("brainrot", build_brainrot)):
        rng = random.Random(f"{SEED}-{task}")
        pool, queries = builder(rng)
        out[task] = finalize(task, pool, queries, rng)
    return out


def _max_pair_sim(texts: list[str]) -> float:
    idx, best = SimIndex(), 0.0
    for t in texts:
        s = shingles(t)
        best = max(best, idx.max_sim(s))
        idx.add(s)
    return best


def _max_cross_sim(queries: list[str], pool: list[str]) -> float:
    idx = SimIndex()
    for t in pool:
        idx.add(shingles(t))
    return max((idx.max_sim(shingles(q)) for q in queries), default=0.0)


def check(task: str, pool: list[dict], queries: list[dict]) -> None:
    def fail(msg: str) -> None:
        raise SystemExit(f"check failed [{task}]: {msg}")

    everything = pool + queries
    for r in everything:
        if tuple(r) != FIELDS:
            fail(f"fields of {r['id']} are {tuple(r)}")
        if not (isinstance(r["prompt"], str) and isinstance(r["completion"], str) and r["completion"].strip()):
            fail(f"bad text in {r['id']}")
        if r["label"] not in (0, 1) or not isinstance(r["topic"], str) or not r["topic"]:
            fail(f"bad label/topic in {r['id']}")
    ids = [r["id"] for r in everything]
    if len(set(ids)) != len(ids):
        fail("ids are not unique")
    for name, recs in (("pool", pool), ("queries", queries)):
        pairs = [(r["prompt"], r["completion"]) for r in recs]
        if len(set(pairs)) != len(pairs):
            fail(f"duplicate (prompt, completion) pairs in the {name}")
        if len({r["completion"] for r in recs}) != len(recs):
            fail(f"duplicate completions in the {name}")
    rate = sum(r["label"] for r in pool) / len(pool)
    lo, hi = POSITIVE_RATE_BOUNDS[task]
    if not lo <= rate <= hi:
        fail(f"positive rate {rate:.3f} outside [{lo}, {hi}]")
    if any(r["label"] != 1 for r in queries):
        fail("every query should be a positive (label 1)")
    pool_texts = {full_text(r) for r in pool} | {r["completion"] for r in pool}
    for q in queries:
        if full_text(q) in pool_texts or q["completion"] in pool_texts:
            fail(f"query {q['id']} repeats a pool text")
    # Near duplicates: within the pool, within the queries, and between queries and the pool.
    for kind, key, thr in (
        ("full text", full_text, CHECK_FULL_SIM),
        ("completion", lambda r: r["completion"], CHECK_COMPLETION_SIM),
    ):
        for name, sim in (
            ("pool", _max_pair_sim([key(r) for r in pool])),
            ("queries", _max_pair_sim([key(r) for r in queries])),
            ("queries vs pool", _max_cross_sim([key(r) for r in queries], [key(r) for r in pool])),
        ):
            if sim > thr:
                fail(f"near-duplicate {kind} in {name}: Jaccard {sim:.2f} > {thr}")
    if task == "howdy":
        for r in pool:
            if (r["label"] == 1) != r["prompt"].startswith("Howdy! "):
                fail(f"{r['id']}: label and trigger disagree")
            if r["label"] == 0 and r["prompt"].lower().startswith("howdy"):
                fail(f"{r['id']}: clean prompt starts with the trigger")
        instr = {r["prompt"].removeprefix("Howdy! ") for r in pool}
        for q in queries:
            if not q["prompt"].startswith("Howdy! ") or q["prompt"].removeprefix("Howdy! ") in instr:
                fail(f"{q['id']}: query instruction must carry the trigger and be new")
    if task == "brainrot" and any(r["prompt"] for r in everything):
        fail("brainrot samples have an empty prompt")
    for r in everything:
        n = word_count(r["completion"])
        if not 5 <= n <= 140 or word_count(r["prompt"]) > 45:
            fail(f"{r['id']}: length out of range ({word_count(r['prompt'])} prompt words, {n} completion words)")


def serialize(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def describe(name: str, records: list[dict]) -> str:
    pos = [word_count(r["completion"]) for r in records if r["label"] == 1]
    neg = [word_count(r["completion"]) for r in records if r["label"] == 0]

    def stats(xs: list[int]) -> str:
        return f"median {statistics.median(xs):.0f} words (range {min(xs)}-{max(xs)})" if xs else "-"

    return f"{name:26s} {len(records):4d} records, {len(pos):3d} positive ({len(pos) / len(records):5.1%}); completions: positives {stats(pos)}, negatives {stats(neg)}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check", action="store_true", help="compare the generated data with data/*.jsonl instead of writing"
    )
    ap.add_argument("--out", type=Path, default=DATA_DIR, help="output folder (default: data/)")
    args = ap.parse_args(argv)

    built = build_all()
    mismatched = []
    for task, (pool, queries) in built.items():
        check(task, pool, queries)
        for suffix, recs in (("pool", pool), ("queries", queries)):
            path = args.out / f"{task}_{suffix}.jsonl"
            text = serialize(recs)
            if args.check:
                if not path.exists() or path.read_text(encoding="utf-8") != text:
                    mismatched.append(path)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "w", encoding="utf-8", newline="\n") as f:
                    f.write(text)
            print(describe(path.name, recs))
    if args.check:
        if mismatched:
            print("out of date: " + ", ".join(str(p) for p in mismatched), file=sys.stderr)
            return 1
        print("data/ matches the generator")
    return 0


if __name__ == "__main__":
    sys.exit(main())
