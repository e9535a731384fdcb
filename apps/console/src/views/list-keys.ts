import { useEffect } from 'preact/hooks';

/** `j`/`k` move the selection in a list; the selected item scrolls into view. */
export function useListKeys(length: number, selected: number, select: (index: number) => void): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement) return;
      if (e.target instanceof HTMLSelectElement || e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === 'j' && selected < length - 1) select(selected + 1);
      else if (e.key === 'k' && selected > 0) select(selected - 1);
      else return;
      requestAnimationFrame(() => document.querySelector('.selected')?.scrollIntoView({ block: 'nearest' }));
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [length, selected, select]);
}
