// The page's colours before its first paint: a classic script in <head>, so a dark system or
// a dark choice never flashes light. data-scheme on <html> is "dark" or "light": the choice
// kept by the theme switch (app.js, localStorage "rein.theme"), else the system's, followed
// when the system changes.
(function () {
  'use strict';
  var media = window.matchMedia('(prefers-color-scheme: dark)');
  function apply() {
    var choice = null;
    try {
      choice = localStorage.getItem('rein.theme');
    } catch (e) {
      choice = null; // storage refused: the system decides
    }
    var dark = choice === 'dark' || (choice !== 'light' && media.matches);
    document.documentElement.dataset.scheme = dark ? 'dark' : 'light';
  }
  apply();
  media.addEventListener('change', apply);
  // app.js calls it again when the person picks a theme.
  window.reinApplyScheme = apply;
})();
